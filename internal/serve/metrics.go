package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus series, registered on a registry of
// their own (one per Server, so tests can run several).
type metrics struct {
	reg       *prometheus.Registry
	running   prometheus.Gauge
	queued    prometheus.Gauge
	finished  *prometheus.CounterVec // outcome: resolved, unresolved, infra_error, cancelled
	rejected  *prometheus.CounterVec // reason: queue_full, draining
	rewardSum prometheus.Counter
	exits     *prometheus.CounterVec // exit_reason
	boxOpen   prometheus.Histogram
	grade     prometheus.Histogram
	total     prometheus.Histogram
}

// Outcomes of a finished rollout, the "outcome" label.
const (
	outcomeResolved   = "resolved"
	outcomeUnresolved = "unresolved"
	outcomeInfra      = "infra_error"
	outcomeCancelled  = "cancelled"
)

func newMetrics() *metrics {
	secs := []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "swerve_rollouts_running", Help: "Rollouts running now.",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "swerve_rollouts_queued", Help: "Rollouts accepted and waiting for a slot.",
		}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swerve_rollouts_finished_total", Help: "Rollouts finished, by outcome.",
		}, []string{"outcome"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swerve_rollouts_rejected_total", Help: "Requests refused before running, by reason.",
		}, []string{"reason"}),
		rewardSum: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "swerve_reward_sum_total", Help: "Sum of the rewards of finished rollouts.",
		}),
		exits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swerve_exit_reasons_total", Help: "Finished rollouts by the agent's exit reason.",
		}, []string{"exit_reason"}),
		boxOpen: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "swerve_box_open_seconds", Help: "Time to open a task's box.", Buckets: secs,
		}),
		grade: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "swerve_grade_seconds", Help: "Time to grade a patch in a fresh box.", Buckets: secs,
		}),
		total: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "swerve_rollout_seconds", Help: "Wall time of a whole rollout, queue excluded.", Buckets: secs,
		}),
	}
	for _, o := range []string{outcomeResolved, outcomeUnresolved, outcomeInfra, outcomeCancelled} {
		m.finished.WithLabelValues(o)
	}
	for _, r := range []string{"queue_full", "draining"} {
		m.rejected.WithLabelValues(r)
	}
	m.reg.MustRegister(m.running, m.queued, m.finished, m.rejected, m.rewardSum, m.exits,
		m.boxOpen, m.grade, m.total,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe records one finished rollout.
func (m *metrics) observe(res *RolloutResult, outcome string) {
	m.finished.WithLabelValues(outcome).Inc()
	if res == nil {
		return
	}
	if res.Reward > 0 {
		m.rewardSum.Add(res.Reward)
	}
	if res.ExitReason != "" {
		m.exits.WithLabelValues(res.ExitReason).Inc()
	}
	if res.Timings.BoxOpen > 0 {
		m.boxOpen.Observe(res.Timings.BoxOpen)
	}
	if res.Timings.Grade > 0 {
		m.grade.Observe(res.Timings.Grade)
	}
	if res.Timings.Total > 0 {
		m.total.Observe(res.Timings.Total)
	}
}
