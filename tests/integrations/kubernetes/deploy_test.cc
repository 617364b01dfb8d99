// deploy/kubernetes/ parses, and the fields that make the extender work are
// what docs/kubernetes.md says: the scheduler's extender block, the configs
// the extender and phasord read (parsed by their own parsers), the fabric,
// the Services behind the urlPrefix and endpoints, the binder's RBAC.
#include <filesystem>

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

TEST(DeployTest, SchedulerConfigurationHasTheExtender) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  ASSERT_TRUE(docs.contains("ConfigMap/phasor-scheduler-config"));
  const YAML::Node config =
      YAML::Load(docs["ConfigMap/phasor-scheduler-config"]["data"]["scheduler-config.yaml"].as<std::string>());
  EXPECT_EQ(config["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(config["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  EXPECT_EQ(config["percentageOfNodesToScore"].as<int>(), 100);
  EXPECT_EQ(config["profiles"][0]["schedulerName"].as<std::string>(), "phasor-scheduler");
  ASSERT_EQ(config["extenders"].size(), 1u);
  const YAML::Node e = config["extenders"][0];
  EXPECT_EQ(e["urlPrefix"].as<std::string>(), "http://phasor-k8s-extender.phasor-system.svc:8888/phasor");
  EXPECT_EQ(e["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(e["prioritizeVerb"].as<std::string>(), "prioritize");
  EXPECT_EQ(e["bindVerb"].as<std::string>(), "bind");
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
  // The scheduler Deployment mounts that config.
  const YAML::Node sched = docs["Deployment/phasor-scheduler"]["spec"]["template"]["spec"];
  EXPECT_EQ(sched["serviceAccountName"].as<std::string>(), "phasor-scheduler");
  EXPECT_EQ(sched["volumes"][0]["configMap"]["name"].as<std::string>(), "phasor-scheduler-config");
}

TEST(DeployTest, ExtenderConfigMatchesItsServiceAndParses) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  absl::StatusOr<ExtenderConfig> c =
      ParseExtenderConfig(docs["ConfigMap/phasor-k8s-extender-config"]["data"]["extender.yaml"].as<std::string>());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->http.port, 8888);
  EXPECT_EQ(c->http.url_prefix, "/phasor");
  EXPECT_EQ(c->extender.phasord_timeout_ms, 200);
  EXPECT_EQ(c->extender.phasord_endpoint, "tcp://phasord.phasor-system.svc:7410");
  EXPECT_EQ(c->extender.topology_path, "/etc/phasor/fabric/fabric.yaml");
  EXPECT_EQ(c->phasord_client_secret_key_file, "/etc/phasor/keys/extender.secret");
  EXPECT_EQ(docs["Service/phasor-k8s-extender"]["spec"]["ports"][0]["port"].as<int>(), 8888);
  EXPECT_EQ(docs["Service/phasor-k8s-extender"]["metadata"]["namespace"].as<std::string>(), "phasor-system");
  EXPECT_EQ(docs["Service/phasord"]["spec"]["ports"][0]["port"].as<int>(), 7410);
  const YAML::Node pod = docs["Deployment/phasor-k8s-extender"]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "phasor-k8s-extender");
  EXPECT_EQ(pod["containers"][0]["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
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

TEST(DeployTest, TheBinderMayCreateBindings) {
  std::map<std::string, YAML::Node> docs = LoadAll();
  const YAML::Node rules = docs["ClusterRole/phasor-k8s-extender"]["rules"];
  bool binding = false;
  for (const YAML::Node& r : rules) {
    for (const YAML::Node& res : r["resources"]) {
      if (res.as<std::string>() != "pods/binding") continue;
      for (const YAML::Node& v : r["verbs"]) binding |= v.as<std::string>() == "create";
    }
  }
  EXPECT_TRUE(binding);
  EXPECT_EQ(docs["ClusterRoleBinding/phasor-k8s-extender"]["subjects"][0]["name"].as<std::string>(),
            "phasor-k8s-extender");
  EXPECT_EQ(docs["ClusterRoleBinding/phasor-scheduler-as-kube-scheduler"]["roleRef"]["name"].as<std::string>(),
            "system:kube-scheduler");
}

}  // namespace
}  // namespace phasor::kubernetes
