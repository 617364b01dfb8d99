// Who may call the extender, and what reaches the API server: loopback by
// default, TLS with client certificates anywhere else (certificates made by
// the test with openssl), the bind verb off unless configured, names checked
// as Kubernetes names and escaped (the `../` pod name of the report never
// reaches a stand-in API server), and request bodies bounded whatever their
// transfer encoding.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "integrations/kubernetes/api_binder.h"
#include "integrations/kubernetes/extender.h"
#include "integrations/kubernetes/extender_config.h"
#include "integrations/kubernetes/http_server.h"
#include "integrations/kubernetes/k8s_names.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/integrations/kubernetes/fake_api_server.h"

namespace phasor::kubernetes {
namespace extender_security_test {
namespace {

using ::phasor::testing::FakeApiServer;
using ::testing::HasSubstr;
using nlohmann::json;

const std::string& Fabric() {
  static const std::string path = std::string(PHASOR_SOURCE_DIR) + "/tests/integrations/kubernetes/leaf_spine_4x4.yaml";
  return path;
}

// An extender that never reaches phasord (nobody binds the endpoint): these
// tests are about the HTTP side and the API server.
std::unique_ptr<Extender> MakeExtender(bool bind_verb, BindFunction bind = nullptr) {
  ExtenderOptions o;
  o.phasord_endpoint = "ipc:///nonexistent/phasor-security-test";
  o.topology_path = Fabric();
  o.phasord_timeout_ms = 50;
  o.bind_verb = bind_verb;
  if (bind_verb && !bind) bind = [](const ExtenderBindingArgs&) { return absl::OkStatus(); };
  auto e = Extender::Create(o, bind);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *std::move(e) : nullptr;
}

std::unique_ptr<ExtenderHttpServer> Serve(Extender* e, HttpServerOptions o = {}) {
  o.port = 0;
  auto s = ExtenderHttpServer::Start(e, o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

// The upstream ExtenderBindingArgs kube-scheduler posts.
std::string BindingArgs(const std::string& ns, const std::string& name, const std::string& node) {
  return json{{"PodName", name}, {"PodNamespace", ns}, {"PodUID", "uid-1"}, {"Node", node}}.dump();
}

// Sends a chunked POST's request line and headers, and no body, and returns
// the status line of the answer ("" when none came within 5 s).
std::string StatusLineBeforeAnyBody(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string head = "POST " + path +
                             " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n";
    EXPECT_EQ(::send(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) got.assign(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return got.substr(0, got.find("\r\n"));
}

TEST(K8sNamesTest, NamesAreDns1123AndEscapedAsOneSegment) {
  for (const std::string& ok : std::vector<std::string>{"a", "kube-system", "ml-team-7", std::string(63, 'a')}) {
    EXPECT_TRUE(IsDns1123Label(ok)) << ok;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "-a", "a-", "A", "a_b", "a.b", "a/b", "..", std::string(64, 'a')}) {
    EXPECT_FALSE(IsDns1123Label(bad)) << bad;
  }
  for (const char* ok : {"victim", "bert-ddp-0", "node-1.rack-2.example"}) EXPECT_TRUE(IsDns1123Subdomain(ok)) << ok;
  for (const char* bad : {"", "a..b", ".a", "a.", "victim/pods/..", "../x", "a b", "a%2Fb", "Victim"}) {
    EXPECT_FALSE(IsDns1123Subdomain(bad)) << bad;
  }
  EXPECT_EQ(EscapePathSegment("victim-0.x"), "victim-0.x");
  EXPECT_EQ(EscapePathSegment("../a/b c"), "..%2Fa%2Fb%20c");
  EXPECT_EQ(CheckObjectName("PodName", "a/../b").message(),
            "PodName: 'a/../b' is not a DNS-1123 subdomain (dot-separated labels of lowercase letters, digits and "
            "'-', 1..253 in all)");
  EXPECT_EQ(CheckNamespace("PodNamespace", "Kube_System\n").message(),
            "PodNamespace: 'Kube_System\\x0a' is not a DNS-1123 label (lowercase letters, digits and '-', 1..63, "
            "starting and ending with a letter or digit)");
}

TEST(ExtenderSecurityTest, ItListensOnLoopbackUnlessTlsWithClientCertificates) {
  EXPECT_EQ(HttpServerOptions().host, "127.0.0.1");
  absl::StatusOr<ExtenderConfig> defaults = ParseExtenderConfig("");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->http.host, "127.0.0.1");
  EXPECT_EQ(defaults->http.port, 8888);
  EXPECT_FALSE(defaults->extender.bind_verb);
  EXPECT_EQ(ParseExtenderConfig("listen: 0.0.0.0:8888\n").status().message(),
            "listen: '0.0.0.0' is not loopback: anyone who reaches it could call the extender; listen on 127.0.0.1 "
            "beside kube-scheduler, or set tls_cert_file, tls_key_file and tls_client_ca_file (TLS with client "
            "certificates)");
  EXPECT_EQ(ParseExtenderConfig("listen: 0.0.0.0:8888\ntls_cert_file: /c\ntls_key_file: /k\n").status().message(),
            "tls_cert_file, tls_key_file, tls_client_ca_file: all three or none (TLS here always checks the "
            "scheduler's client certificate)");
  EXPECT_TRUE(ParseExtenderConfig("listen: 127.0.0.2:8888\n").ok());
  EXPECT_TRUE(ParseExtenderConfig("listen: \"[::1]:8888\"\n").ok());
  std::unique_ptr<Extender> e = MakeExtender(false);
  HttpServerOptions everywhere;
  everywhere.host = "0.0.0.0";
  EXPECT_EQ(ExtenderHttpServer::Start(e.get(), everywhere).status().code(), absl::StatusCode::kInvalidArgument);
  // The binder's and a plan's calls must fit the scheduler's httpTimeout.
  EXPECT_EQ(ParseExtenderConfig("bind_verb: true\napi_timeout_ms: 2000\n").status().message(),
            "api_timeout_ms: 2000 ms (a bind's API call) + 100 ms must fit http_timeout_ms (1000 ms, the scheduler's "
            "httpTimeout)");
  EXPECT_TRUE(ParseExtenderConfig("bind_verb: true\napi_timeout_ms: 900\n").ok());
}

TEST(ExtenderSecurityTest, TheSafetyAndLifecycleKeysParse) {
  absl::StatusOr<ExtenderConfig> c = ParseExtenderConfig(
      "listen: 0.0.0.0:9443\ntls_cert_file: /c.crt\ntls_key_file: /c.key\ntls_client_ca_file: /ca.crt\n"
      "http_timeout_ms: 2500\nphasord_timeout_ms: 600\nlifecycle_timeout_ms: 3000\nbind_verb: true\n"
      "api_timeout_ms: 900\nwatch_pods: false\nscheduler_name: gpu-scheduler\nwatch_timeout_s: 60\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http.host, "0.0.0.0");
  EXPECT_EQ(c->http.tls_client_ca_file, "/ca.crt");
  EXPECT_EQ(c->extender.http_timeout_ms, 2500);
  EXPECT_EQ(c->http.io_timeout_ms, 2500);
  EXPECT_EQ(c->extender.lifecycle_timeout_ms, 3000);
  EXPECT_TRUE(c->extender.bind_verb);
  EXPECT_FALSE(c->watch_pods);
  EXPECT_EQ(c->watch.scheduler_name, "gpu-scheduler");
  EXPECT_EQ(c->watch.watch_timeout_s, 60);
  EXPECT_EQ(c->watch.api.timeout_ms, 900);
  EXPECT_EQ(ParseExtenderConfig("bind_verb: maybe\n").status().message(), "bind_verb: wrong type");
}

TEST(ExtenderSecurityTest, TheBindVerbIsOffUnlessConfigured) {
  FakeApiServer api;
  ApiServerOptions ao;
  ao.url = api.url();
  ao.token_file = "";
  std::unique_ptr<Extender> e = MakeExtender(false);
  std::unique_ptr<ExtenderHttpServer> server = Serve(e.get());
  httplib::Client c("127.0.0.1", server->port());
  httplib::Result r = c.Post("/phasor/bind", BindingArgs("kube-system", "victim", "s1"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);  // not served: answered before the body is read
  r = c.Post("/phasor/nothing", BindingArgs("kube-system", "victim", "s1"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(StatusLineBeforeAnyBody(server->port(), "/phasor/bind"), "HTTP/1.1 404 Not Found");
  EXPECT_THAT(e->Bind({"victim", "kube-system", "uid", "s1"}).error, HasSubstr("the bind verb is off"));
  EXPECT_TRUE(api.paths().empty());
  EXPECT_EQ(e->stats().bind_failures, 1u);
}

TEST(ExtenderSecurityTest, APodNameThatLeavesItsPathNeverReachesTheApiServer) {
  FakeApiServer api;
  ApiServerOptions ao;
  ao.url = api.url();
  ao.token_file = "";
  absl::StatusOr<BindFunction> binder = MakeApiServerBinder(ao);
  ASSERT_TRUE(binder.ok());
  std::unique_ptr<Extender> e = MakeExtender(true, *binder);
  std::unique_ptr<ExtenderHttpServer> server = Serve(e.get());
  httplib::Client c("127.0.0.1", server->port());
  // The report's name, as kube-scheduler would post it.
  const std::string escape = "victim/pods/../../../../../api/v1/namespaces/kube-system/pods/x";
  for (const auto& [ns, name, node, field] : std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"kube-system", escape, "s1", "PodName"},
           {"kube-system", "..", "s1", "PodName"},
           {"kube-system/pods/victim", "x", "s1", "PodNamespace"},
           {"Kube_System", "x", "s1", "PodNamespace"},
           {"kube-system", "victim", "s1/../../x", "Node"}}) {
    httplib::Result r = c.Post("/phasor/bind", BindingArgs(ns, name, node), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_THAT(json::parse(r->body)["Error"].get<std::string>(), HasSubstr("bind: " + field + ": ")) << name;
  }
  EXPECT_TRUE(api.paths().empty());  // not one of them was sent
  // The binder refuses them too, before any request.
  EXPECT_EQ((*binder)({escape, "kube-system", "", "s1"}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(api.paths().empty());
  // A Kubernetes name goes to its own binding path, and nowhere else.
  httplib::Result ok = c.Post("/phasor/bind", BindingArgs("kube-system", "victim", "s1"), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(json::parse(ok->body)["Error"].get<std::string>(), "");
  EXPECT_EQ(api.paths(), std::vector<std::string>{"/api/v1/namespaces/kube-system/pods/victim/binding"});
  EXPECT_EQ(api.bound().at("kube-system/victim"), "s1");
  EXPECT_EQ(e->stats().bind_failures, 5u);
  EXPECT_EQ(e->stats().binds, 1u);
}

// Certificates made here with openssl: a CA, the extender's server
// certificate (127.0.0.1), a client certificate of that CA, and one of
// another CA.
class ExtenderTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::phasor::testing::MakeTempDir();
    auto sh = [this](const std::string& cmd) {
      const std::string line = "cd '" + dir_ + "' && (" + cmd + ") >>openssl.log 2>&1";
      ASSERT_EQ(std::system(line.c_str()), 0) << cmd << "\n" << ::phasor::testing::ReadFileOrEmpty(dir_ + "/openssl.log");
    };
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    for (const char* ca : {"ca", "other-ca"}) {
      sh(absl::StrCat("openssl req -x509 ", key, " -keyout ", ca, ".key -out ", ca, ".crt -days 2 -subj /CN=", ca));
    }
    sh("printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > server.ext");
    sh("printf 'extendedKeyUsage=clientAuth\\n' > client.ext");
    sh("openssl req " + key + " -keyout server.key -out server.csr -subj /CN=phasor-k8s-extender");
    sh("openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext "
       "-out server.crt");
    for (const auto& [name, ca] : {std::pair{"scheduler", "ca"}, std::pair{"stranger", "other-ca"}}) {
      sh(absl::StrCat("openssl req ", key, " -keyout ", name, ".key -out ", name, ".csr -subj /CN=", name));
      sh(absl::StrCat("openssl x509 -req -in ", name, ".csr -CA ", ca, ".crt -CAkey ", ca, ".key -CAcreateserial ",
                      "-days 2 -extfile client.ext -out ", name, ".crt"));
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }

  HttpServerOptions TlsOptions() const {
    HttpServerOptions o;
    o.tls_cert_file = File("server.crt");
    o.tls_key_file = File("server.key");
    o.tls_client_ca_file = File("ca.crt");
    return o;
  }
  // A client that checks the extender's certificate against the CA, with
  // the given client certificate ("" for none).
  std::unique_ptr<httplib::SSLClient> Client(int port, const std::string& who) const {
    auto c = who.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", port)
                         : std::make_unique<httplib::SSLClient>("127.0.0.1", port, File(who + ".crt"), File(who + ".key"));
    c->set_ca_cert_path(File("ca.crt").c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(2, 0);
    c->set_read_timeout(2, 0);
    return c;
  }

  std::string dir_;
};

TEST_F(ExtenderTlsTest, OnlyAClientCertificateOfTheCaGetsAnAnswer) {
  std::unique_ptr<Extender> e = MakeExtender(false);
  std::unique_ptr<ExtenderHttpServer> server = Serve(e.get(), TlsOptions());
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->tls());
  const std::string body = R"({"Pod": {"metadata": {"name": "lonely"}}, "NodeNames": ["s1"]})";
  httplib::Result ok = Client(server->port(), "scheduler")->Post("/phasor/prioritize", body, "application/json");
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, R"([{"Host":"s1","Score":0}])");
  // No certificate, another CA's, plain HTTP: no answer at all.
  for (const char* who : {"", "stranger"}) {
    httplib::Result refused = Client(server->port(), who)->Post("/phasor/prioritize", body, "application/json");
    EXPECT_FALSE(refused) << who;
  }
  httplib::Client plain("127.0.0.1", server->port());
  plain.set_read_timeout(2, 0);
  httplib::Result p = plain.Get("/healthz");
  EXPECT_TRUE(!p || p->status != 200);
  // With TLS it may listen anywhere (checked, not bound here).
  HttpServerOptions everywhere = TlsOptions();
  everywhere.host = "0.0.0.0";
  EXPECT_TRUE(ValidateHttpServerOptions(everywhere).ok());
  // Files that do not load are named.
  HttpServerOptions bad = TlsOptions();
  bad.tls_client_ca_file = File("missing.crt");
  EXPECT_EQ(ExtenderHttpServer::Start(e.get(), bad).status().message(),
            "tls_client_ca_file: cannot load '" + File("missing.crt") + "' (PEM CA certificates)");
  bad = TlsOptions();
  bad.tls_key_file = File("scheduler.key");
  EXPECT_EQ(ExtenderHttpServer::Start(e.get(), bad).status().message(),
            "tls_key_file: '" + File("scheduler.key") + "' is not the key of tls_cert_file");
}

// gzip of `size` zero bytes (a few KiB that inflate to `size`).
std::string GzipZeros(size_t size) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  const std::string zeros(1 << 20, '\0');
  std::string out;
  char buf[1 << 16];
  for (size_t done = 0; done <= size; done += zeros.size()) {
    const bool last = done + zeros.size() > size;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    z.avail_in = static_cast<uInt>(last ? size - done : zeros.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof(buf);
      deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      out.append(buf, sizeof(buf) - z.avail_out);
    } while (z.avail_out == 0);
    if (last) break;
  }
  deflateEnd(&z);
  return out;
}

TEST(ExtenderBodyTest, TheLimitHoldsForEveryTransferEncoding) {
  std::unique_ptr<Extender> e = MakeExtender(false);
  HttpServerOptions o;
  o.max_body_bytes = 1 << 20;
  o.io_timeout_ms = 10000;  // loaded machines: the test is about the limit, not the clock
  std::unique_ptr<ExtenderHttpServer> server = Serve(e.get(), o);
  httplib::Client c("127.0.0.1", server->port());
  c.set_read_timeout(30, 0);
  c.set_write_timeout(30, 0);
  const size_t fifty_mib = size_t{50} << 20;
  // Chunked (no length): read up to the limit, then refused.
  auto chunked = [&](const std::string& path, size_t total) {
    return c.Post(
        path,
        [total, sent = size_t{0}](size_t, httplib::DataSink& sink) mutable {
          static const std::string piece(64 << 10, ' ');
          const size_t n = std::min(piece.size(), total - sent);
          if (n > 0 && !sink.write(piece.data(), n)) return false;
          sent += n;
          if (sent >= total) sink.done();
          return true;
        },
        "application/json");
  };
  httplib::Result r = chunked("/phasor/filter", fifty_mib);
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->body, "request body above max_body_bytes (1048576)\n");
  // Declared too large: refused without reading it.
  httplib::Client declared("127.0.0.1", server->port());
  declared.set_read_timeout(30, 0);
  declared.set_write_timeout(30, 0);
  r = declared.Post("/phasor/prioritize", std::string(fifty_mib, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  // Compressed: 50 MiB inflated from a few KiB.
  httplib::Client gz("127.0.0.1", server->port());
  gz.set_read_timeout(30, 0);
  const std::string bomb = GzipZeros(fifty_mib);
  EXPECT_LT(bomb.size(), 256u << 10);
  r = gz.Post("/phasor/filter", {{"Content-Encoding", "gzip"}}, bomb, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  // A path no verb serves is answered before its body is read (a chunked
  // POST to it was read whole into memory before its 404): the headers
  // alone get the answer.
  EXPECT_EQ(StatusLineBeforeAnyBody(server->port(), "/nothing"), "HTTP/1.1 404 Not Found");
  // A chunked body within the limit is served.
  httplib::Client small("127.0.0.1", server->port());
  const std::string body = R"({"Pod": {"metadata": {"name": "lonely"}}, "NodeNames": ["s1"]})";
  r = small.Post(
      "/phasor/prioritize",
      [&body](size_t, httplib::DataSink& sink) {
        sink.write(body.data(), body.size());
        sink.done();
        return true;
      },
      "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"([{"Host":"s1","Score":0}])");
}

}  // namespace
}  // namespace extender_security_test
}  // namespace phasor::kubernetes
