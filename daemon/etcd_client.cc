#include "daemon/etcd_client.h"

#include <httplib.h>

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace phasor::daemon {
namespace {

using nlohmann::json;

std::string B64(const std::string& s) { return absl::Base64Escape(s); }

std::string Unb64(const json& v) {
  std::string out;
  if (v.is_string()) absl::Base64Unescape(v.get<std::string>(), &out);
  return out;
}

// The gateway writes int64 as JSON strings (and leaves out zeros).
int64_t Int(const json& obj, const char* field) {
  auto it = obj.find(field);
  if (it == obj.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  int64_t v = 0;
  if (it->is_string()) (void)absl::SimpleAtoi(it->get<std::string>(), &v);
  return v;
}

EtcdKv ToKv(const json& kv) {
  EtcdKv out;
  out.key = Unb64(kv.value("key", json()));
  out.value = Unb64(kv.value("value", json()));
  out.create_revision = Int(kv, "create_revision");
  out.mod_revision = Int(kv, "mod_revision");
  out.lease = Int(kv, "lease");
  return out;
}

}  // namespace

EtcdClient::EtcdClient(std::vector<std::string> endpoints, int timeout_ms)
    : endpoints_(std::move(endpoints)), timeout_ms_(timeout_ms) {
  for (const std::string& e : endpoints_) {
    auto c = std::make_unique<httplib::Client>(e);
    const time_t sec = timeout_ms_ / 1000;
    const time_t usec = (timeout_ms_ % 1000) * 1000;
    c->set_connection_timeout(sec, usec);
    c->set_read_timeout(sec, usec);
    c->set_write_timeout(sec, usec);
    c->set_keep_alive(true);
    // cpp-httplib writes the header and the body in two sends: with Nagle's
    // algorithm the body waits for the header's delayed ACK (40 ms a call).
    c->set_tcp_nodelay(true);
    clients_.push_back(std::move(c));
  }
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

absl::StatusOr<std::string> EtcdClient::Post(const std::string& path, const std::string& body) {
  std::string why = "no endpoints";
  for (size_t attempt = 0; attempt < clients_.size(); ++attempt) {
    const size_t i = (current_ + attempt) % clients_.size();
    httplib::Result r = clients_[i]->Post(path, body, "application/json");
    if (!r) {
      why = absl::StrCat(endpoints_[i], ": ", httplib::to_string(r.error()));
      continue;
    }
    if (r->status != 200) {
      // etcd's own refusals ({"error": ..., "code": ...}) are answers: not retried elsewhere.
      why = absl::StrCat(endpoints_[i], ": HTTP ", r->status, ": ", r->body.substr(0, 300));
      if (r->status >= 500 && r->status != 501) continue;
      return absl::InternalError(absl::StrCat("etcd ", path, ": ", why));
    }
    current_ = i;
    return std::move(r->body);
  }
  return absl::UnavailableError(
      absl::StrCat("etcd ", path, ": no member answered (last: ", why, ")"));
}

absl::StatusOr<std::vector<EtcdKv>> EtcdClient::Range(const std::string& key,
                                                      const EtcdRangeOptions& o) {
  json req = {{"key", B64(key)}};
  if (!o.range_end.empty()) req["range_end"] = B64(o.range_end);
  if (o.keys_only) req["keys_only"] = true;
  if (o.limit > 0) req["limit"] = std::to_string(o.limit);
  if (o.descending) {
    req["sort_order"] = "DESCEND";
    req["sort_target"] = "KEY";
  }
  absl::StatusOr<std::string> body = Post("/v3/kv/range", req.dump());
  if (!body.ok()) return body.status();
  json reply = json::parse(*body, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return absl::InternalError("etcd range: unparsable reply");
  std::vector<EtcdKv> out;
  if (auto it = reply.find("kvs"); it != reply.end() && it->is_array()) {
    for (const json& kv : *it) out.push_back(ToKv(kv));
  }
  return out;
}

absl::StatusOr<EtcdTxnResult> EtcdClient::Txn(const std::vector<EtcdCompare>& compares,
                                              const std::vector<EtcdOp>& success) {
  json cmp = json::array();
  for (const EtcdCompare& c : compares) {
    cmp.push_back({{"target", "CREATE"},
                   {"result", "EQUAL"},
                   {"key", B64(c.key)},
                   {"create_revision", std::to_string(c.create_revision)}});
  }
  json ops = json::array();
  for (const EtcdOp& op : success) {
    if (op.kind == EtcdOp::Kind::kPut) {
      json put = {{"key", B64(op.key)}, {"value", B64(op.value)}};
      if (op.lease != 0) put["lease"] = std::to_string(op.lease);
      ops.push_back({{"request_put", put}});
    } else {
      json del = {{"key", B64(op.key)}};
      if (!op.range_end.empty()) del["range_end"] = B64(op.range_end);
      ops.push_back({{"request_delete_range", del}});
    }
  }
  json req = {{"compare", cmp}, {"success", ops}};
  absl::StatusOr<std::string> body = Post("/v3/kv/txn", req.dump());
  if (!body.ok()) return body.status();
  json reply = json::parse(*body, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return absl::InternalError("etcd txn: unparsable reply");
  EtcdTxnResult out;
  out.succeeded = reply.value("succeeded", false);
  if (auto h = reply.find("header"); h != reply.end() && h->is_object())
    out.revision = Int(*h, "revision");
  return out;
}

absl::StatusOr<int64_t> EtcdClient::LeaseGrant(int64_t ttl_s) {
  absl::StatusOr<std::string> body =
      Post("/v3/lease/grant", json({{"TTL", std::to_string(ttl_s)}}).dump());
  if (!body.ok()) return body.status();
  json reply = json::parse(*body, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return absl::InternalError("etcd lease grant: unparsable reply");
  const int64_t id = Int(reply, "ID");
  if (id == 0)
    return absl::InternalError(absl::StrCat("etcd lease grant: no lease: ", body->substr(0, 300)));
  return id;
}

absl::StatusOr<int64_t> EtcdClient::LeaseKeepAlive(int64_t id) {
  absl::StatusOr<std::string> body =
      Post("/v3/lease/keepalive", json({{"ID", std::to_string(id)}}).dump());
  if (!body.ok()) return body.status();
  json reply = json::parse(*body, nullptr, false);
  if (reply.is_discarded() || !reply.is_object())
    return absl::InternalError("etcd keepalive: unparsable reply");
  auto it = reply.find("result");
  if (it == reply.end() || !it->is_object()) {
    return absl::InternalError(absl::StrCat("etcd keepalive: ", body->substr(0, 300)));
  }
  return Int(*it, "TTL");
}

absl::Status EtcdClient::LeaseRevoke(int64_t id) {
  absl::StatusOr<std::string> body =
      Post("/v3/lease/revoke", json({{"ID", std::to_string(id)}}).dump());
  return body.ok() ? absl::OkStatus() : body.status();
}

}  // namespace phasor::daemon
