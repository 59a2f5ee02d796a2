package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/serve"
	"github.com/swerve-dev/swerve/internal/serve/sessions"
)

func init() { register(newServeCmd) }

// serveFlags are swerve serve's own flags; the Gym agent config keys keep
// Gym's names and defaults.
type serveFlags struct {
	Listen           string
	Token            string
	Config           string
	Concurrency      int
	Queue            int
	Env              string
	CacheDirTemplate string
	RunGolden        bool
	EvalTimeout      time.Duration
	SkipIfExists     bool
	ResultsDir       string
	StepLimit        int
	Reward           string
	MaxSessions      int
	SessionTTL       time.Duration
	TokenIDs         bool
	Prewarm          int
}

func newServeCmd() *cobra.Command {
	var (
		df datasetFlags
		bf boxFlags
		af agentFlags
		sf serveFlags
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve rollouts to RL trainers over HTTP (NeMo Gym agent surface)",
		Long: `serve is one long-running process that runs a rollout per request, the way a
NeMo Gym agent server does:

  POST /run                 a Gym row in (responses_create_params, the task's
                            fields, optional policy_base_url / policy_api_key);
                            the row out with response (an OpenAI Responses
                            object), reward, resolved and metadata (patch, eval
                            report, exit reason, timings)
  POST /aggregate_metrics   Gym's reward profile of finished rows
  GET  /                    {"status":"ok"}
  GET  /metrics             Prometheus: rollouts running, queued, finished;
                            rewards, exit reasons, box-open and grade latency

For trainers that call the tools themselves, a box kept open per session
(at most --max_sessions, closed after --session_ttl unused):
  POST /seed_session        NeMo Gym's resources surface: opens the row's box
                            (session cookie on every answer); then POST /bash,
                            /str_replace_editor, /file_editor, /search, and
                            POST /verify (grades the box's diff in a fresh box)
  POST /sandboxes           verl's sandbox tools: one box per request_id;
                            POST /sandboxes/{id}/execute (bash, submit_solution
                            → the reward), DELETE /sandboxes/{id}

The task comes from the row's own fields (any dialect swerve loads), or from
--dataset by the row's instance_id. Each rollout's model calls go to the row's
policy_base_url when it has one, else to --llm_name.

A rollout that fails is still an answer with status 200: reward 0 and its exit
reason, or, when the failure was outside the model (a box, an image, the
engine, the policy server past its retries, the grader), reward 0 with an
infra_error field that says so. Such rows say nothing about the policy.

At most --concurrency rollouts run at once and --queue more wait; past that
a request gets 429 with Retry-After. A client that disconnects cancels its
rollout and frees its box. The first SIGTERM or Ctrl-C drains: new and queued
rollouts get 503, running ones finish, then the server exits; a second one cancels the
running rollouts at once. Boxes are always removed.

Off loopback a bearer token is required (--token or SWERVE_TOKEN): serve
refuses to start without one, and every route but GET / then needs
"Authorization: Bearer <token>". NeMo Gym's own client sends no token: keep
it on loopback or behind a proxy that adds one.

--config FILE reads Gym's agent keys (concurrency, env, cache_dir_template,
run_golden, step_timeout, eval_timeout, skip_if_exists, step_limit,
collapse_limit) and any of the flags below, flat or nested the way a Gym
config nests an agent (<name>: responses_api_agents: <impl>: ...); flags on
the command line win.`,
		Example: `  swerve serve --dataset verified-test.parquet --llm_name hosted_vllm/policy
  swerve serve --config swerve_agent.yaml --listen 0.0.0.0:8000 --token "$SWERVE_TOKEN"
  curl -s 127.0.0.1:8000/run -d @row.json | jq .reward`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sf.Config != "" {
				if err := applyServeConfig(cmd.Flags(), sf.Config); err != nil {
					return err
				}
			}
			return runServe(cmd, &df, &bf, &af, &sf)
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	af.register(cmd.Flags())
	fs := cmd.Flags()
	// Gym's defaults for the keys the agent flags share.
	setDefault(fs, "step_timeout", "600")
	setDefault(fs, "collapse_limit", strconv.Itoa(agent.DefaultCollapseLimit))
	fs.StringVar(&sf.Listen, "listen", serve.DefaultListen, "address to listen on (host:port)")
	fs.StringVar(&sf.Token, "token", "", "bearer token every request but GET / must carry (default $SWERVE_TOKEN); required off loopback")
	fs.StringVar(&sf.Config, "config", "", "YAML file with Gym's agent keys and these flags (flags win)")
	workersVar(fs, &sf.Concurrency, "concurrency", serve.DefaultConcurrency, "rollouts running at once")
	fs.IntVar(&sf.Queue, "queue", serve.DefaultQueue, "rollouts that may wait for a slot; past that, 429")
	fs.StringVar(&sf.Env, "env", "", "Gym's sandbox key: docker (the docker backend) or singularity (the apptainer backend); empty: --backend decides")
	fs.StringVar(&sf.CacheDirTemplate, "cache_dir_template", "", "Gym's .sif path template for env singularity, e.g. '/images/{instance_id}.sif' (sets --sif_template; unused with docker)")
	fs.BoolVar(&sf.RunGolden, "run_golden", false, "grade each task's gold patch instead of running the model (a pipeline check)")
	secondsVar(fs, &sf.EvalTimeout, "eval_timeout", 1800*time.Second, "time limit of the eval script")
	fs.BoolVar(&sf.SkipIfExists, "skip_if_exists", false, "answer from --results_dir when a result for the row's instance_id and model is there")
	fs.StringVar(&sf.ResultsDir, "results_dir", "", "keep each rollout's answer as DIR/<subset>/<model>/<instance_id>/<instance_id>.json (Gym's layout); default: nowhere")
	fs.IntVar(&sf.StepLimit, "step_limit", 250, "Gym's step limit: the episode ends after this many model calls (unless --max_steps is given)")
	fs.StringVar(&sf.Reward, "reward", "", "force a grader: swebench, swefactory, r2e, swesmith, harbor (default: the task's)")
	fs.BoolVar(&sf.TokenIDs, "token_ids", false, "ask the policy server for token ids and log-probs (vLLM, NeMo RL and Gym model servers give them) and put them on every model output item, contiguous across turns; a server that does not give them fails the rollout")
	workersVar(fs, &sf.MaxSessions, "max_sessions", sessions.DefaultMaxSessions, "boxes the session surfaces (/seed_session, /sandboxes) keep open at once; past that, 429")
	secondsVar(fs, &sf.SessionTTL, "session_ttl", sessions.DefaultTTL, "a session left unused this long is closed and its box removed")
	registerPrewarm(fs, &sf.Prewarm)
	return cmd
}

// resultsWhere is --results_dir as an absolute path when it can be made one
// (the operator sees where the files land whatever the working directory).
func resultsWhere(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// setDefault changes a registered flag's default value.
func setDefault(fs *pflag.FlagSet, name, value string) {
	f := fs.Lookup(name)
	if f == nil {
		panic("serve: no flag " + name)
	}
	if err := f.Value.Set(value); err != nil {
		panic(fmt.Sprintf("serve: flag %s: %v", name, err))
	}
	f.DefValue = f.Value.String()
}

// applyServeConfig sets every flag named in the config that the command
// line did not set.
func applyServeConfig(fs *pflag.FlagSet, path string) error {
	m, err := serve.LoadConfig(path)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := fs.Lookup(k)
		if f == nil || k == "config" || k == "token" {
			if k == "token" {
				return fmt.Errorf("--config %s: token: give it with --token or SWERVE_TOKEN, not in a file", path)
			}
			return fmt.Errorf("--config %s: unknown key %q", path, k)
		}
		if f.Changed || m[k] == nil {
			continue
		}
		var vals []string
		switch v := m[k].(type) {
		case []any:
			for _, x := range v {
				vals = append(vals, fmt.Sprint(x))
			}
		case bool:
			vals = []string{strconv.FormatBool(v)}
		case float64:
			vals = []string{strconv.FormatFloat(v, 'f', -1, 64)}
		default:
			vals = []string{fmt.Sprint(v)}
		}
		if k == "cache_dir_template" && len(vals) == 1 && vals[0] == "???" {
			continue // Gym's "required" marker: only singularity needs it
		}
		for _, v := range vals {
			if err := fs.Set(k, v); err != nil {
				return fmt.Errorf("--config %s: %s: %w", path, k, err)
			}
		}
	}
	return nil
}

func runServe(cmd *cobra.Command, df *datasetFlags, bf *boxFlags, af *agentFlags, sf *serveFlags) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	if sf.Token == "" {
		sf.Token = os.Getenv("SWERVE_TOKEN")
	}
	if err := serve.CheckListen(sf.Listen, sf.Token); err != nil {
		return err
	}
	switch sf.Env {
	case "":
	case "docker":
		if cmd.Flags().Changed("backend") && bf.Backend != "docker" {
			return fmt.Errorf("--env docker and --backend %s: give one", bf.Backend)
		}
		bf.Backend = "docker"
	case "singularity":
		// Gym's singularity is the apptainer backend; its
		// cache_dir_template is the backend's --sif_template.
		if cmd.Flags().Changed("backend") && sandbox.Canonical(bf.Backend) != "apptainer" {
			return fmt.Errorf("--env singularity and --backend %s: give one", bf.Backend)
		}
		bf.Backend = "apptainer"
		if p, ok := bf.Params["sif_template"]; ok && sf.CacheDirTemplate != "" && !cmd.Flags().Changed("sif_template") {
			*p = sf.CacheDirTemplate
		}
	default:
		return fmt.Errorf("--env %q: want docker or singularity", sf.Env)
	}
	if sf.Concurrency <= 0 {
		return fmt.Errorf("--concurrency %d: must be at least 1", sf.Concurrency)
	}
	if sf.Queue < 0 {
		return fmt.Errorf("--queue %d: must be 0 or more", sf.Queue)
	}
	if sf.SkipIfExists && sf.ResultsDir == "" {
		return fmt.Errorf("--skip_if_exists answers from kept results: give --results_dir too")
	}
	closeWarm, err := bf.setPrewarm(sf.Prewarm)
	if err != nil {
		return err
	}
	defer closeWarm(context.WithoutCancel(ctx))
	ro, err := newRunRollouts(cmd, df, bf, af, sf)
	if err != nil {
		return err
	}
	srv, err := serve.New(serve.Options{Rollouts: ro, Tasks: ro.tasks, Token: sf.Token, Concurrency: sf.Concurrency, Queue: sf.Queue,
		Progress: stderr})
	if err != nil {
		return err
	}
	// The trainer-driven surfaces: NeMo Gym's resources server and verl's
	// sandbox tools, one box per session, behind the same token.
	sess := sessions.New(sessions.Options{
		Open: ro.bf.openAgentRepo, Tasks: sessions.NewCatalog(ro.dataset, true),
		Verifier:    sessions.GraderVerifier{Open: ro.open, Reward: sf.Reward, EvalTimeout: sf.EvalTimeout},
		MaxSessions: sf.MaxSessions, TTL: sf.SessionTTL, StepTimeout: af.StepTimeout, Reward: sf.Reward,
	})
	sessions.Register(srv.Mux(), sess)
	for _, m := range []struct {
		name, help, typ string
		f               func(sessions.Stats) int
	}{
		{"swerve_sessions_open", "Sessions (boxes) open or opening now.", "gauge", func(s sessions.Stats) int { return s.Open }},
		{"swerve_sessions_opened_total", "Session boxes opened.", "counter", func(s sessions.Stats) int { return s.Opened }},
		{"swerve_sessions_reaped_total", "Sessions closed for being unused past --session_ttl.", "counter", func(s sessions.Stats) int { return s.Reaped }},
		{"swerve_sessions_verified_total", "Session verifications that produced a verdict.", "counter", func(s sessions.Stats) int { return s.Verified }},
	} {
		srv.AddMetric(m.name, m.help, m.typ, func() float64 { return float64(m.f(sess.Stats())) })
	}
	addWarmMetrics(srv, bf.warm)
	srv.OnShutdown(func(ctx context.Context) { sess.Close(ctx) })
	srv.OnShutdown(closeWarm)
	ln, err := net.Listen("tcp", sf.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", sf.Listen, err)
	}
	drain := gracefulStop(ctx, "draining: new and queued rollouts get 503, running ones finish")
	if sf.ResultsDir != "" {
		fmt.Fprintf(stderr, "swerve serve: keeping each rollout's answer under %s\n", resultsWhere(sf.ResultsDir))
	}
	fmt.Fprintf(stderr, "swerve serve: listening on http://%s (concurrency %d, queue %d)\n", ln.Addr(), sf.Concurrency, sf.Queue)
	err = srv.Serve(ctx, ln, drain)
	fmt.Fprintf(stderr, "swerve serve: stopped\n")
	return err
}
