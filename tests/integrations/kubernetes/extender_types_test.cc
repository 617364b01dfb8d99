// The extender/v1 wire types: upstream's golden payloads parse and
// re-serialise to the same JSON; bad bodies are errors naming the field; the
// pod -> job rules.
#include "integrations/kubernetes/extender_types.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "integrations/kubernetes/pod_group.h"

namespace phasor::kubernetes {
namespace {

using nlohmann::json;

std::string Golden(const std::string& name) {
  std::ifstream in(std::string(PHASOR_SOURCE_DIR) + "/data/kubernetes/golden/golden_" + name + ".json");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

// The re-serialised document equals the golden one (same members, any order)
// and, dumped, the same bytes as the golden file once both are normalised.
void ExpectSame(const json& out, const std::string& golden) {
  const json expected = json::parse(golden);
  EXPECT_EQ(out, expected) << out.dump() << "\nvs\n" << expected.dump();
}

TEST(GoldenTest, ExtenderArgsRoundTrips) {
  absl::StatusOr<ExtenderArgs> a = ParseExtenderArgs(Golden("ExtenderArgs"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pod.name, "podname");
  ASSERT_TRUE(a->nodes.has_value());
  ASSERT_EQ(a->nodes->items.size(), 1u);
  EXPECT_EQ(a->nodes->items[0].name, "nodename");
  ASSERT_TRUE(a->node_names.has_value());
  EXPECT_EQ(*a->node_names, std::vector<std::string>{"node1"});
  ExpectSame(ToJson(*a), Golden("ExtenderArgs"));
}

TEST(GoldenTest, ExtenderFilterResultRoundTrips) {
  absl::StatusOr<ExtenderFilterResult> r = ParseExtenderFilterResult(Golden("ExtenderFilterResult"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->failed_nodes, (std::map<std::string, std::string>{{"foo", "bar"}}));
  EXPECT_EQ(r->failed_and_unresolvable_nodes, (std::map<std::string, std::string>{{"baz", "qux"}}));
  EXPECT_EQ(r->error, "myerror");
  ExpectSame(ToJson(*r), Golden("ExtenderFilterResult"));
}

TEST(GoldenTest, HostPriorityRoundTrips) {
  absl::StatusOr<HostPriority> p = ParseHostPriority(Golden("HostPriority"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->host, "myhost");
  EXPECT_EQ(p->score, 1);
  ExpectSame(ToJson(*p), Golden("HostPriority"));
  // The prioritize reply is a bare array of them.
  absl::StatusOr<HostPriorityList> list = ParseHostPriorityList("[" + Golden("HostPriority") + "]");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(ToJson(*list).dump(), R"([{"Host":"myhost","Score":1}])");
}

TEST(GoldenTest, BindingRoundTrips) {
  absl::StatusOr<ExtenderBindingArgs> a = ParseExtenderBindingArgs(Golden("ExtenderBindingArgs"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pod_name, "mypodname");
  EXPECT_EQ(a->pod_namespace, "mypodnamespace");
  EXPECT_EQ(a->pod_uid, "mypoduid");
  EXPECT_EQ(a->node, "mynode");
  ExpectSame(ToJson(*a), Golden("ExtenderBindingArgs"));
  absl::StatusOr<ExtenderBindingResult> r = ParseExtenderBindingResult(Golden("ExtenderBindingResult"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->error, "myerror");
  ExpectSame(ToJson(*r), Golden("ExtenderBindingResult"));
}

TEST(GoldenTest, PreemptionRoundTrips) {
  absl::StatusOr<ExtenderPreemptionArgs> a = ParseExtenderPreemptionArgs(Golden("ExtenderPreemptionArgs"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->node_name_to_victims.at("foo").num_pdb_violations, 1);
  EXPECT_EQ(a->node_name_to_meta_victims.at("foo").pod_uids, std::vector<std::string>{"myuid"});
  ExpectSame(ToJson(*a), Golden("ExtenderPreemptionArgs"));
  absl::StatusOr<ExtenderPreemptionResult> r = ParseExtenderPreemptionResult(Golden("ExtenderPreemptionResult"));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectSame(ToJson(*r), Golden("ExtenderPreemptionResult"));
}

// The hot verbs' replies written as text are byte for byte ToJson's dump(),
// escapes and all, and throw where dump() throws (a name that is not UTF-8).
TEST(ReplyTextTest, EqualsTheJsonTreesDump) {
  const std::vector<std::string> names = {"s1", "", "node \"q\" \\ x", "tab\there", "n\x01", "\xc3\xa9t\xc3\xa9", "\x7f"};
  HostPriorityList list;
  for (size_t i = 0; i < names.size(); ++i) list.push_back({names[i], static_cast<int64_t>(i) - 1});
  EXPECT_EQ(ToJsonText(list), ToJson(list).dump());
  EXPECT_EQ(ToJsonText(HostPriorityList{}), "[]");
  EXPECT_EQ(ToJsonText(HostPriorityList{{"s1", 10}, {"s2", 0}}),
            R"([{"Host":"s1","Score":10},{"Host":"s2","Score":0}])");

  ExtenderFilterResult r;
  EXPECT_EQ(ToJsonText(r), ToJson(r).dump());
  EXPECT_EQ(ToJsonText(r), R"({"Error":"","FailedAndUnresolvableNodes":{},"FailedNodes":{},"NodeNames":null,"Nodes":null})");
  r.node_names = names;
  for (const std::string& n : names) r.failed_nodes[n + "-f"] = "phasor: not in the plan of \"ml/a\"";
  r.failed_and_unresolvable_nodes["gone"] = "no such node";
  r.error = "a \\ b\n";
  EXPECT_EQ(ToJsonText(r), ToJson(r).dump());
  r.node_names->clear();
  EXPECT_EQ(ToJsonText(r), ToJson(r).dump());
  // Full-Node mode goes through the tree.
  absl::StatusOr<ExtenderFilterResult> golden = ParseExtenderFilterResult(Golden("ExtenderFilterResult"));
  ASSERT_TRUE(golden.ok()) << golden.status();
  EXPECT_EQ(ToJsonText(*golden), ToJson(*golden).dump());

  EXPECT_THROW(ToJsonText(HostPriorityList{{"bad\xff", 0}}), json::type_error);
  EXPECT_THROW(ToJson(HostPriorityList{{"bad\xff", 0}}).dump(), json::type_error);
  ExtenderFilterResult bad;
  bad.node_names = std::vector<std::string>{"bad\xff"};
  EXPECT_THROW(ToJsonText(bad), json::type_error);
}

TEST(ExtenderArgsTest, FieldNamesMatchCaseInsensitivelyAsInGo) {
  absl::StatusOr<ExtenderArgs> a = ParseExtenderArgs(R"({"pod": {"metadata": {"name": "p"}}, "nodenames": ["n1"]})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pod.name, "p");
  EXPECT_EQ(*a->node_names, std::vector<std::string>{"n1"});
  EXPECT_FALSE(a->nodes.has_value());
  // Written back with upstream's exact case and a null Nodes.
  EXPECT_EQ(ToJson(*a).dump(), R"({"NodeNames":["n1"],"Nodes":null,"Pod":{"metadata":{"name":"p"}}})");
}

TEST(ExtenderArgsTest, ReadsPodMetadataAndGpus) {
  absl::StatusOr<ExtenderArgs> a = ParseExtenderArgs(R"({"Pod": {"metadata": {"name": "w-0", "namespace": "ml",
      "uid": "u1", "labels": {"scheduling.x-k8s.io/pod-group": "bert"}, "annotations": {"phasor.io/job-size": "4"}},
      "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "4"}}},
                              {"resources": {"requests": {"nvidia.com/gpu": 2}}}]}}, "NodeNames": []})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->pod.namespace_, "ml");
  EXPECT_EQ(a->pod.uid, "u1");
  EXPECT_EQ(a->pod.gpus, 6u);
  EXPECT_EQ(a->pod.labels.at("scheduling.x-k8s.io/pod-group"), "bert");
  EXPECT_EQ(a->pod.annotations.at("phasor.io/job-size"), "4");
}

TEST(ExtenderArgsTest, BadBodiesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "body: not valid JSON"},
      {"{\"Pod\": ", "body: not valid JSON"},
      {"42", "body: must be a JSON object or array"},
      {"[]", "body: must be a JSON object"},
      {"{}", "Pod: missing"},
      {R"({"Pod": 3, "NodeNames": []})", "Pod: must be an object"},
      {R"({"Pod": {}})", "Nodes: neither Nodes nor NodeNames given"},
      {R"({"Pod": {}, "NodeNames": ["a", 1]})", "NodeNames[1]: must be a string"},
      {R"({"Pod": {}, "NodeNames": "a"})", "NodeNames: must be an array of strings or null"},
      {R"({"Pod": {"metadata": {"labels": {"a": 1}}}, "NodeNames": []})", "Pod.metadata.labels[a]: must be a string"},
      {R"({"Pod": {"metadata": {"name": 7}}, "NodeNames": []})", "Pod.metadata.name: must be a string"},
      {R"({"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}})", "Nodes.items[0].metadata.name: missing"},
      {R"({"Pod": {}, "Nodes": {"items": {}}})", "Nodes.items: must be an array"},
      {R"({"Pod": {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1.5"}}}]}}, "NodeNames": []})",
       "Pod.spec.containers[0].resources.limits[nvidia.com/gpu]: must be a whole number of GPUs"},
  };
  for (const auto& [body, message] : cases) {
    absl::StatusOr<ExtenderArgs> a = ParseExtenderArgs(body);
    ASSERT_FALSE(a.ok()) << body;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_EQ(a.status().message(), message) << body;
  }
}

TEST(ExtenderBindingArgsTest, BadBodiesNameTheField) {
  EXPECT_EQ(ParseExtenderBindingArgs(R"({"PodName": "p"})").status().message(), "Node: missing");
  EXPECT_EQ(ParseExtenderBindingArgs(R"({"Node": "n"})").status().message(), "PodName: missing");
  EXPECT_EQ(ParseExtenderBindingArgs(R"({"PodName": 1, "Node": "n"})").status().message(),
            "PodName: must be a string");
}

Pod GroupPod(std::map<std::string, std::string> labels, std::map<std::string, std::string> annotations) {
  Pod p;
  p.name = "w-0";
  p.namespace_ = "ml";
  p.labels = std::move(labels);
  p.annotations = std::move(annotations);
  return p;
}

TEST(PodGroupTest, CoschedulingLabelAndVolcanoAnnotation) {
  PodGroupOptions o;
  absl::StatusOr<std::optional<PodJob>> j =
      JobOfPod(GroupPod({{"scheduling.x-k8s.io/pod-group", "bert"}}, {{"phasor.io/job-size", "4"}}), o);
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_TRUE(j->has_value());
  EXPECT_EQ((*j)->key, "ml/bert");
  EXPECT_EQ((*j)->pods, 4u);
  j = JobOfPod(GroupPod({}, {{"scheduling.k8s.io/group-name", "vc"}, {"scheduling.x-k8s.io/min-member", "3"}}), o);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)->key, "ml/vc");
  EXPECT_EQ((*j)->pods, 3u);
  // The phasor annotation wins over minMember.
  j = JobOfPod(GroupPod({{"scheduling.x-k8s.io/pod-group", "g"}},
                        {{"phasor.io/job-size", "2"}, {"scheduling.x-k8s.io/min-member", "8"}}),
               o);
  EXPECT_EQ((*j)->pods, 2u);
  // No group: not a job.
  j = JobOfPod(GroupPod({}, {{"phasor.io/job-size", "2"}}), o);
  ASSERT_TRUE(j.ok());
  EXPECT_FALSE(j->has_value());
}

TEST(PodGroupTest, BadSizesNameTheAnnotation) {
  PodGroupOptions o;
  EXPECT_EQ(JobOfPod(GroupPod({{"scheduling.x-k8s.io/pod-group", "g"}}, {}), o).status().message(),
            "metadata.annotations[phasor.io/job-size]: missing (pod group 'g' needs its size)");
  for (const std::string bad : {"0", "-1", "two", "4097", "3 "}) {
    EXPECT_EQ(JobOfPod(GroupPod({{"scheduling.x-k8s.io/pod-group", "g"}}, {{"phasor.io/job-size", bad}}), o)
                  .status()
                  .message(),
              "metadata.annotations[phasor.io/job-size]: must be a whole number in 1..4096, got '" + bad + "'");
  }
}

TEST(PodGroupTest, APodsRankIsItsFirstRankKeyLabelThenAnnotation) {
  PodGroupOptions o;
  // None: no rank.
  EXPECT_EQ(*RankIndexOfPod(GroupPod({}, {}), o, 4), std::nullopt);
  // An Indexed Job's completion index, as a label or as an annotation.
  EXPECT_EQ(*RankIndexOfPod(GroupPod({{"batch.kubernetes.io/job-completion-index", "3"}}, {}), o, 4), 3u);
  EXPECT_EQ(*RankIndexOfPod(GroupPod({}, {{"batch.kubernetes.io/job-completion-index", "0"}}), o, 4), 0u);
  // A StatefulSet's ordinal; phasor's own key goes before the others.
  EXPECT_EQ(*RankIndexOfPod(GroupPod({{"apps.kubernetes.io/pod-index", "2"}}, {}), o, 4), 2u);
  EXPECT_EQ(*RankIndexOfPod(GroupPod({{"apps.kubernetes.io/pod-index", "2"}}, {{"phasor.io/rank", "1"}}), o, 4), 1u);
  // Configured keys only.
  o.rank_index_keys = {"training.kubeflow.org/replica-index"};
  EXPECT_EQ(*RankIndexOfPod(GroupPod({{"apps.kubernetes.io/pod-index", "2"}}, {}), o, 4), std::nullopt);
  EXPECT_EQ(*RankIndexOfPod(GroupPod({{"training.kubeflow.org/replica-index", "2"}}, {}), o, 4), 2u);
  // Bad values name where they were read.
  o = PodGroupOptions{};
  for (const std::string bad : {"4", "-1", "one", "", "1 "}) {
    EXPECT_EQ(RankIndexOfPod(GroupPod({{"batch.kubernetes.io/job-completion-index", bad}}, {}), o, 4).status().message(),
              "metadata.labels[batch.kubernetes.io/job-completion-index]: the pod's rank must be a whole number in "
              "0..3 (the job has 4 pods), got '" + bad + "'");
  }
}

}  // namespace
}  // namespace phasor::kubernetes
