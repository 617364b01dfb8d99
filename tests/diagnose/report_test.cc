// The renderers: every job and link of the input appears, the HTML is
// self-contained, and the JSON carries the diagnosis' numbers.
#include "diagnose/report.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "placer/rank_json.h"
#include "tests/testing/subprocess.h"

namespace phasor::diagnose {
namespace report_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

placer::RankRequest Example() {
  auto r = placer::ParseRankRequest(
      testing::ReadFileOrEmpty(std::string(PHASOR_SOURCE_DIR) + "/data/examples/diagnose.json"));
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

std::string HtmlEscaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '>') {
      out.append("&gt;");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// `text` without any occurrence of `what`.
std::string Without(std::string text, const std::string& what) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at)) {
    text.erase(at, what.size());
  }
  return text;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlReportTest, ShowsEveryJobAndLinkOfTheInput) {
  const placer::RankRequest request = Example();
  auto d = Diagnose(request, "");
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string html = RenderHtml(*d, {"phasor diagnose", "example"});
  for (const placer::Link& l : request.links) {
    const std::string id = HtmlEscaped(l.id);
    EXPECT_THAT(html, HasSubstr(absl::StrCat(">", id, "<"))) << l.id;
    // A section with both pictures, now and with phasor.
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<title>unified circle of ", id, ", now</title>")));
    EXPECT_THAT(html,
                HasSubstr(absl::StrCat("<title>unified circle of ", id, ", with phasor</title>")));
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<title>load on ", id,
                                             " over one unified period, with phasor</title>")));
  }
  for (const placer::Job& j : request.jobs) {
    // One ring per link the job is on, in each of the two circles.
    size_t links = 0;
    for (const LinkDiagnosis& l : d->links) {
      for (const JobOnLink& on : l.jobs) links += on.job == j.id;
    }
    EXPECT_GT(links, 0u) << j.id;
    EXPECT_EQ(Count(html, absl::StrCat("dominant-baseline=\"middle\">", j.id, "</text>")),
              2 * links)
        << j.id;
  }
  // The cluster table links each row to its section.
  for (size_t i = 0; i < d->links.size(); ++i) {
    EXPECT_THAT(html, HasSubstr(absl::StrCat("href=\"#link-", i, "\"")));
    EXPECT_THAT(html, HasSubstr(absl::StrCat("<section id=\"link-", i, "\">")));
  }
  EXPECT_THAT(html, HasSubstr("0.8905"));  // score now
  EXPECT_THAT(html, HasSubstr("0.9831"));  // with phasor
}

TEST(HtmlReportTest, IsSelfContained) {
  auto d = Diagnose(Example(), "");
  ASSERT_TRUE(d.ok());
  const std::string html = RenderHtml(*d);
  // The only "http" is the SVG namespace (an identifier, never fetched).
  EXPECT_THAT(Without(html, "xmlns=\"http://www.w3.org/2000/svg\""), Not(HasSubstr("http")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  // url() only for the page's own patterns and clip paths.
  EXPECT_THAT(Without(Without(html, "url(#hatch"), "url(#over"), Not(HasSubstr("url(")));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("</html>"));
}

TEST(HtmlReportTest, EscapesIds) {
  placer::RankRequest r;
  r.links = {{"<l&1>", 10.0}};
  placer::TrafficProfile p{4000, 1000, {8, 8, 0, 0}, std::nullopt, std::nullopt};
  r.jobs = {{"a\"b", p, std::nullopt}, {"<script>", p, std::nullopt}};
  r.candidates = {{"c", {{"a\"b", {{"<l&1>", 1.0}}}, {"<script>", {{"<l&1>", 1.0}}}}, {}, {}, false}};
  auto d = Diagnose(r, "");
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string html = RenderHtml(*d);
  EXPECT_THAT(html, Not(HasSubstr("<script>")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;"));
  EXPECT_THAT(html, HasSubstr("&lt;l&amp;1&gt;"));
  EXPECT_THAT(html, HasSubstr("a&quot;b"));
}

TEST(HtmlReportTest, ListsLinksAndJobsWithoutContentionToo) {
  placer::RankRequest r;
  r.links = {{"shared", 10.0}, {"spare", 40.0}, {"idle", 40.0}};
  placer::TrafficProfile p{4000, 1000, {8, 8, 0, 0}, std::nullopt, std::nullopt};
  r.jobs = {{"a", p, std::nullopt}, {"b", p, std::nullopt}, {"alone", p, std::nullopt}};
  r.candidates = {
      {"c", {{"a", {{"shared", 1.0}}}, {"b", {{"shared", 1.0}}}, {"alone", {{"spare", 1.0}}}}, {}, {}, false}};
  auto d = Diagnose(r, "");
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string html = RenderHtml(*d);
  for (const char* id : {"shared", "spare", "idle", "a", "b", "alone"}) {
    EXPECT_THAT(html, HasSubstr(absl::StrCat(">", id, "<"))) << id;
  }
  EXPECT_THAT(html, HasSubstr("<span class=\"ql\">spare</span> (alone)"));
}

TEST(TableReportTest, ListsLinksByGainAndTheShifts) {
  auto d = Diagnose(Example(), "");
  ASSERT_TRUE(d.ok());
  const std::string table = RenderTable(*d);
  EXPECT_THAT(table, HasSubstr("placement running: score now 0.8905, with phasor 0.9831"));
  EXPECT_THAT(table, HasSubstr("excess over capacity: 17.8 TB/h now, 1.5 TB/h with phasor"));
  EXPECT_LT(table.find("1    leaf1->spine1"), table.find("2    spine1->leaf2"));
  EXPECT_LT(table.find("2    spine1->leaf2"), table.find("3    leaf1->spine2"));
  EXPECT_LT(table.find("3    leaf1->spine2"), table.find("4    leaf2->spine2"));
  EXPECT_THAT(table,
              HasSubstr("  bert               120.0 ms       4.0 ms (t0_epoch_us)      57.0 ms"));  // centred (docs/placer.md)
  EXPECT_THAT(table, Not(HasSubstr("link load")));
  const std::string detail = RenderTable(*d, {true, 40});
  EXPECT_EQ(Count(detail, "link load |"), 8u);  // 4 links, now and with phasor
}

TEST(JsonReportTest, CarriesTheNumbers) {
  auto d = Diagnose(Example(), "");
  ASSERT_TRUE(d.ok());
  const nlohmann::ordered_json j = DiagnosisToJson(*d);
  EXPECT_EQ(j["candidate"], "running");
  EXPECT_EQ(j["achievable_score"].get<double>(), d->achievable_score);
  EXPECT_EQ(j["current_score"].get<double>(), d->current_score);
  EXPECT_EQ(j["epoch_us"].get<int64_t>(), 1764400000000000);
  ASSERT_EQ(j["links"].size(), d->links.size());
  for (size_t i = 0; i < d->links.size(); ++i) {
    const LinkDiagnosis& l = d->links[i];
    EXPECT_EQ(j["links"][i]["id"], l.id);
    EXPECT_EQ(j["links"][i]["current_score"].get<double>(), l.current_score);
    EXPECT_EQ(j["links"][i]["achievable_score"].get<double>(), l.achievable_score);
    EXPECT_EQ(j["links"][i]["excess_bytes_per_hour_before"].get<double>(),
              l.excess_bytes_per_hour_before);
    EXPECT_EQ(j["links"][i]["load_after_gbps"].get<std::vector<double>>(), l.load_after);
    for (size_t p = 0; p < l.jobs.size(); ++p) {
      EXPECT_EQ(j["links"][i]["jobs"][p]["recommended_shift_us"].get<uint32_t>(),
                l.jobs[p].recommended_shift_us);
    }
  }
  EXPECT_EQ(j["jobs"].size(), 5u);
  EXPECT_EQ(j["jobs"][4]["phase_source"], "assumed 0");
}

}  // namespace
}  // namespace report_test
}  // namespace phasor::diagnose
