// deploy/kubernetes/ parses, and the fields that make the extender work are
// what docs/kubernetes.md says: the scheduler's extender block, the configs
// the extender and phasord read (parsed by their own parsers), the fabric,
// the Services behind the urlPrefix and endpoints, the binder's RBAC.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "daemon/config.h"
#include "gtest/gtest.h"
#include "integrations/kubernetes/extender_config.h"
#include "topology/topology_yaml.h"
#include "yaml-cpp/yaml.h"

namespace phasor::kubernetes {
namespace {

std::string DeployDir() { return std::string(PHASOR_SOURCE_DIR) + "/deploy/kubernetes"; }

// Every document of every file, by "Kind/name".
std::map<std::string, YAML::Node> LoadAll() {
  std::map<std::string, YAML::Node> out;
  for (const auto& entry : std::filesystem::directory_iterator(DeployDir())) {
    if (entry.path().extension() != ".yaml") continue;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(entry.path().string())) {
      if (!doc || doc.IsNull()) continue;
      const std::string key = doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>();
      EXPECT_FALSE(out.contains(key)) << key << " twice";
      out[key] = doc;
    }
  }
  return out;
}

// "1s", "500ms" -> milliseconds (the durations the scheduler's config uses here).
int DurationMs(const std::string& d) {
  if (d.size() > 2 && d.substr(d.size() - 2) == "ms") return std::stoi(d.substr(0, d.size() - 2));
  EXPECT_EQ(d.back(), 's') << d;
  return static_cast<int>(std::stod(d.substr(0, d.size() - 1)) * 1000);
}

YAML::Node SchedulerConfig(std::map<std::string, YAML::Node>& docs) {
  EXPECT_TRUE(docs.contains("ConfigMap/phasor-scheduler-config"));
  return YAML::Load(docs["ConfigMap/phasor-scheduler-config"]["data"]["scheduler-config.yaml"].as<std::string>());
}

absl::StatusOr<ExtenderConfig> ExtenderConfigOf(std::map<std::string, YAML::Node>& docs) {
  return ParseExtenderConfig(docs["ConfigMap/phasor-k8s-extender-config"]["data"]["extender.yaml"].as<std::string>());
}

TEST(DeployTest, SchedulerConfigurationHasTheExtender) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  const YAML::Node config = SchedulerConfig(docs);
  EXPECT_EQ(config["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(config["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  EXPECT_EQ(config["percentageOfNodesToScore"].as<int>(), 100);
  EXPECT_EQ(config["profiles"][0]["schedulerName"].as<std::string>(), "phasor-scheduler");
  ASSERT_EQ(config["extenders"].size(), 1u);
  const YAML::Node e = config["extenders"][0];
  // The extender beside the scheduler, on loopback.
  EXPECT_EQ(e["urlPrefix"].as<std::string>(), "http://127.0.0.1:8888/phasor");
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_FALSE(e["bindVerb"]) << "the scheduler's own binder binds";
  EXPECT_EQ(e["weight"].as<int>(), 20);
  EXPECT_TRUE(e["nodeCacheCapable"].as<bool>());
  EXPECT_TRUE(e["ignorable"].as<bool>());
  EXPECT_FALSE(e["enableHTTPS"].as<bool>());
  EXPECT_EQ(e["httpTimeout"].as<std::string>(), "1s");
  ASSERT_EQ(e["managedResources"].size(), 1u);
  EXPECT_EQ(e["managedResources"][0]["name"].as<std::string>(), "nvidia.com/gpu");
  EXPECT_FALSE(e["managedResources"][0]["ignoredByScheduler"].as<bool>());
  // A planned node (score 10) outweighs the in-tree plugins' ~1,200 points.
  EXPECT_GT(10 * e["weight"].as<int>() * 10, 1200);
  // The scheduler Deployment mounts that config, and runs the extender as its second container.
  const YAML::Node sched = docs["Deployment/phasor-scheduler"]["spec"]["template"]["spec"];
  EXPECT_EQ(sched["serviceAccountName"].as<std::string>(), "phasor-scheduler");
  EXPECT_EQ(sched["volumes"][0]["configMap"]["name"].as<std::string>(), "phasor-scheduler-config");
  ASSERT_EQ(sched["containers"].size(), 2u);
  const YAML::Node extender = sched["containers"][1];
  EXPECT_EQ(extender["command"][0].as<std::string>(), "phasor-k8s-extender");
  EXPECT_FALSE(extender["ports"]) << "it listens on loopback: no port to declare";
  EXPECT_EQ(extender["readinessProbe"]["exec"]["command"][2].as<std::string>(), "http://127.0.0.1:8888/healthz");
  EXPECT_FALSE(docs.contains("Service/phasor-k8s-extender")) << "nothing outside the pod calls it";
  EXPECT_FALSE(docs.contains("Deployment/phasor-k8s-extender"));
}

// The timeouts the two sides are configured with agree: the extender's
// http_timeout_ms is the scheduler's httpTimeout, and a plan's two phasord
// calls fit inside it (the extender refuses to start otherwise).
TEST(DeployTest, ExtenderConfigMatchesTheSchedulersAndParses) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  absl::StatusOr<ExtenderConfig> c = ExtenderConfigOf(docs);
  ASSERT_TRUE(c.ok()) << c.status();
  const YAML::Node e = SchedulerConfig(docs)["extenders"][0];
  EXPECT_EQ(c->extender.http_timeout_ms, DurationMs(e["httpTimeout"].as<std::string>()));
  EXPECT_EQ(c->http.io_timeout_ms, c->extender.http_timeout_ms);
  EXPECT_LE(2 * c->extender.phasord_timeout_ms + kTimeoutMarginMs, c->extender.http_timeout_ms);
  EXPECT_EQ(c->extender.phasord_timeout_ms, 200);
  EXPECT_EQ("http://" + c->http.host + ":" + std::to_string(c->http.port) + c->http.url_prefix,
            e["urlPrefix"].as<std::string>());
  EXPECT_TRUE(IsLoopbackHost(c->http.host));
  EXPECT_FALSE(c->extender.bind_verb);
  EXPECT_TRUE(c->watch_pods);
  EXPECT_EQ(c->watch.scheduler_name, SchedulerConfig(docs)["profiles"][0]["schedulerName"].as<std::string>());
  EXPECT_EQ(c->extender.phasord_endpoint, "tcp://phasord.phasor-system.svc:7410");
  EXPECT_EQ(c->extender.topology_path, "/etc/phasor/fabric/fabric.yaml");
  EXPECT_EQ(c->phasord_client_secret_key_file, "/etc/phasor/keys/extender.secret");
  EXPECT_EQ(docs["Service/phasord"]["spec"]["ports"][0]["port"].as<int>(), 7410);
}

// Nothing can reach the scheduler's pod but its secure port; phasord takes
// its CURVE sockets from anywhere and its metrics from monitoring only.
TEST(DeployTest, NetworkPoliciesCloseWhatNeedsNoCaller) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  ASSERT_TRUE(docs.contains("NetworkPolicy/phasor-scheduler"));
  const YAML::Node sched = docs["NetworkPolicy/phasor-scheduler"]["spec"];
  EXPECT_EQ(sched["podSelector"]["matchLabels"]["app.kubernetes.io/name"].as<std::string>(), "phasor-scheduler");
  EXPECT_EQ(sched["policyTypes"][0].as<std::string>(), "Ingress");
  ASSERT_EQ(sched["ingress"].size(), 1u);
  ASSERT_EQ(sched["ingress"][0]["ports"].size(), 1u);
  EXPECT_EQ(sched["ingress"][0]["ports"][0]["port"].as<int>(), 10259);
  ASSERT_TRUE(docs.contains("NetworkPolicy/phasord"));
  const YAML::Node d = docs["NetworkPolicy/phasord"]["spec"];
  std::set<int> open_to_all, monitoring_only;
  for (const YAML::Node& rule : d["ingress"]) {
    const bool everyone = rule["from"][0]["namespaceSelector"].size() == 0;
    for (const YAML::Node& p : rule["ports"]) (everyone ? open_to_all : monitoring_only).insert(p["port"].as<int>());
  }
  EXPECT_EQ(open_to_all, (std::set<int>{7410, 7411, 7412}));
  EXPECT_EQ(monitoring_only, (std::set<int>{9464}));
}

TEST(DeployTest, PhasordConfigAndFabricParse) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  absl::StatusOr<daemon::DaemonOptions> d =
      daemon::ParseDaemonConfig(docs["ConfigMap/phasord-config"]["data"]["phasord.yaml"].as<std::string>());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->request_endpoint, "tcp://0.0.0.0:7410");
  EXPECT_TRUE(d->curve.enabled());
  EXPECT_EQ(d->topology_path, "/etc/phasor/fabric/fabric.yaml");
  absl::StatusOr<topology::Topology> fabric =
      topology::ParseTopologyYaml(docs["ConfigMap/phasor-fabric"]["data"]["fabric.yaml"].as<std::string>(), "fabric");
  ASSERT_TRUE(fabric.ok()) << fabric.status();
  EXPECT_EQ(fabric->num_servers(), 16u);
}

// No phasor identity may bind pods: the extender has no account of its own
// (it uses the scheduler pod's, whose stock role is the scheduler's).
TEST(DeployTest, NoPhasorRoleBindsPods) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  for (const auto& [key, doc] : docs) {
    if (doc["kind"].as<std::string>() != "ClusterRole" && doc["kind"].as<std::string>() != "Role") continue;
    for (const YAML::Node& r : doc["rules"]) {
      for (const YAML::Node& res : r["resources"]) EXPECT_NE(res.as<std::string>(), "pods/binding") << key;
    }
  }
  EXPECT_FALSE(docs.contains("ServiceAccount/phasor-k8s-extender"));
  EXPECT_EQ(docs["ClusterRoleBinding/phasor-scheduler-as-kube-scheduler"]["roleRef"]["name"].as<std::string>(),
            "system:kube-scheduler");
}

// phasord's shipped config is the measured one: neither the manifest nor the
// testbed (bench/testbed/testbed.py) sets re-publishing or the closed loop,
// so both run the defaults docs/testbed.md and docs/simulator.md measured.
TEST(DeployTest, PhasordRunsTheMeasuredDefaults) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  const std::string manifest = docs["ConfigMap/phasord-config"]["data"]["phasord.yaml"].as<std::string>();
  std::ifstream in(std::string(PHASOR_SOURCE_DIR) + "/bench/testbed/testbed.py");
  std::stringstream testbed;
  testbed << in.rdbuf();
  ASSERT_FALSE(testbed.str().empty());
  for (const std::string& text : {manifest, testbed.str()}) {
    EXPECT_EQ(text.find("republish_interval_ms"), std::string::npos);
    EXPECT_EQ(text.find("realign:"), std::string::npos);
  }
  absl::StatusOr<daemon::DaemonOptions> d = daemon::ParseDaemonConfig(manifest);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->realign);
  EXPECT_EQ(d->republish_interval_ms, 0u);
}

// deploy/kubernetes/ha/phasord.yaml: three replicas on etcd, ready only while
// leading (GET /leader), each advertising its pod address.
TEST(DeployTest, HighlyAvailablePhasordParses) {
  std::map<std::string, YAML::Node> docs;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(DeployDir() + "/ha/phasord.yaml")) {
    docs[doc["kind"].as<std::string>() + "/" + doc["metadata"]["name"].as<std::string>()] = doc;
  }
  ASSERT_TRUE(docs.contains("ConfigMap/phasord-config"));
  absl::StatusOr<daemon::DaemonOptions> d =
      daemon::ParseDaemonConfig(docs["ConfigMap/phasord-config"]["data"]["phasord.yaml"].as<std::string>());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->state_store.backend, "etcd");
  EXPECT_EQ(d->state_store.etcd.endpoints.size(), 3u);
  EXPECT_EQ(d->state_store.etcd.advertise_endpoint, "tcp://${POD_IP}:7410");
  const YAML::Node spec = docs["Deployment/phasord"]["spec"];
  EXPECT_EQ(spec["replicas"].as<int>(), 3);
  EXPECT_EQ(spec["strategy"]["type"].as<std::string>(), "Recreate");
  const YAML::Node c = spec["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/leader");
  EXPECT_EQ(c["env"][0]["name"].as<std::string>(), "POD_IP");
  EXPECT_FALSE(c["volumeMounts"].size() == 0);
  for (const YAML::Node& m : c["volumeMounts"]) EXPECT_NE(m["mountPath"].as<std::string>(), "/var/lib/phasor");
}

}  // namespace
}  // namespace phasor::kubernetes
