package serve

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsParse: /metrics is valid text exposition, as the Prometheus
// project's own parser reads it, with the values the server recorded.
func TestMetricsParse(t *testing.T) {
	m := newMetrics()
	m.running.Inc()
	m.finished.WithLabelValues(`odd "label"\n`).Inc()
	m.observe(&RolloutResult{Reward: 1, ExitReason: "submitted", Timings: Timings{BoxOpen: 0.3, Grade: 12, Total: 20}}, outcomeResolved)
	m.observe(&RolloutResult{ExitReason: "submitted", Timings: Timings{Grade: 0.05}}, outcomeUnresolved)
	rec := httptest.NewRecorder()
	m.reg.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("unparsable exposition: %v\n%s", err, rec.Body.String())
	}
	for _, name := range []string{"swerve_rollouts_running", "swerve_rollouts_queued", "swerve_rollouts_finished_total", "swerve_rollouts_rejected_total",
		"swerve_reward_sum_total", "swerve_exit_reasons_total", "swerve_signals_total", "swerve_box_open_seconds", "swerve_grade_seconds", "swerve_rollout_seconds",
		"go_goroutines", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if got := fams["swerve_rollouts_running"].GetMetric()[0].GetGauge().GetValue(); got != 1 {
		t.Errorf("running %g, want 1", got)
	}
	g := fams["swerve_grade_seconds"].GetMetric()[0].GetHistogram()
	if g.GetSampleCount() != 2 || g.GetSampleSum() != 12.05 {
		t.Errorf("grade histogram count %d sum %g, want 2 and 12.05", g.GetSampleCount(), g.GetSampleSum())
	}
	for _, b := range g.GetBucket() {
		want := uint64(0)
		switch {
		case b.GetUpperBound() >= 12:
			want = 2
		case b.GetUpperBound() >= 0.05:
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%g holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	var labels []string
	for _, mm := range fams["swerve_rollouts_finished_total"].GetMetric() {
		labels = append(labels, mm.GetLabel()[0].GetValue())
	}
	if !strings.Contains(strings.Join(labels, "|"), `odd "label"\n`) {
		t.Errorf("escaped label lost: %q", labels)
	}
}
