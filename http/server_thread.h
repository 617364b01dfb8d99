// An httplib::Server (or SSLServer) serving on its own thread until Stop().
//
// httplib's stop() acts only on a server already in its accept loop: a stop
// that comes before the thread got there would leave the thread in accept()
// forever. Stop() therefore waits until the server runs (or its listen has
// returned, e.g. after a failure) before it stops it, then joins the thread.
//
// Thread safety: Stop() (and the destructor) from one thread; the server must
// be bound (bind_to_port) before Start and outlive this object.
#ifndef PHASOR_HTTP_SERVER_THREAD_H_
#define PHASOR_HTTP_SERVER_THREAD_H_

#include <atomic>
#include <thread>

namespace httplib {
class Server;
}  // namespace httplib

namespace phasor::http {

class ServerThread {
 public:
  ServerThread() = default;
  ~ServerThread();
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;

  // Starts serving `server` (already bound) on a new thread.
  void Start(httplib::Server* server);
  // Stops the server and joins the thread; a no-op when not started or stopped.
  void Stop();

 private:
  httplib::Server* server_ = nullptr;
  std::atomic<bool> listen_returned_{false};
  std::thread thread_;
};

}  // namespace phasor::http

#endif  // PHASOR_HTTP_SERVER_THREAD_H_
