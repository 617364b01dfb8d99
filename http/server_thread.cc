#include "http/server_thread.h"

#include <httplib.h>

#include <chrono>

namespace phasor::http {

ServerThread::~ServerThread() { Stop(); }

void ServerThread::Start(httplib::Server* server) {
  server_ = server;
  listen_returned_ = false;
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_returned_ = true;
  });
}

void ServerThread::Stop() {
  if (!thread_.joinable()) return;
  while (!server_->is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
  thread_.join();
}

}  // namespace phasor::http
