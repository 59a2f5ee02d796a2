package serve

import "github.com/swerve-dev/swerve/internal/agent/signals"

// metrics are the server's Prometheus series, on a registry of their own
// (one per Server, so tests can run several).
type metrics struct {
	reg       *registry
	running   *value
	queued    *value
	finished  *counterVec // outcome: resolved, unresolved, infra_error, cancelled
	rejected  *counterVec // reason: queue_full, draining
	rewardSum *value
	exits     *counterVec // exit_reason
	signals   *counterVec // kind: the audit's flags
	boxOpen   *histogram
	grade     *histogram
	total     *histogram
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
		reg:       &registry{},
		running:   newGauge("swerve_rollouts_running", "Rollouts running now."),
		queued:    newGauge("swerve_rollouts_queued", "Rollouts accepted and waiting for a slot."),
		finished:  newCounterVec("swerve_rollouts_finished_total", "Rollouts finished, by outcome.", "outcome"),
		rejected:  newCounterVec("swerve_rollouts_rejected_total", "Requests refused before running, by reason.", "reason"),
		rewardSum: newCounter("swerve_reward_sum_total", "Sum of the rewards of finished rollouts."),
		exits:     newCounterVec("swerve_exit_reasons_total", "Finished rollouts by the agent's exit reason.", "exit_reason"),
		signals:   newCounterVec("swerve_signals_total", "Audit flags raised in finished rollouts' trajectories, by kind.", "kind"),
		boxOpen:   newHistogram("swerve_box_open_seconds", "Time to open a task's box.", secs),
		grade:     newHistogram("swerve_grade_seconds", "Time to grade a patch in a fresh box.", secs),
		total:     newHistogram("swerve_rollout_seconds", "Wall time of a whole rollout, queue excluded.", secs),
	}
	for _, o := range []string{outcomeResolved, outcomeUnresolved, outcomeInfra, outcomeCancelled} {
		m.finished.WithLabelValues(o)
	}
	for _, r := range []string{"queue_full", "draining"} {
		m.rejected.WithLabelValues(r)
	}
	for _, k := range signals.Kinds {
		m.signals.WithLabelValues(string(k))
	}
	m.reg.add(m.running, m.queued, m.finished, m.rejected, m.rewardSum, m.exits, m.signals, m.boxOpen, m.grade, m.total)
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
	for _, f := range res.Signals {
		m.signals.WithLabelValues(string(f.Kind)).Inc()
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
