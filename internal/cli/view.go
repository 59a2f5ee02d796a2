package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/view"
)

func init() { register(newViewCmd) }

func newViewCmd() *cobra.Command {
	var listen string
	var open bool
	cmd := &cobra.Command{
		Use:   "view RUN_DIR|FILE [RUN_DIR2|FILE2]",
		Short: "Browse a run's trajectories, patches, test output and rewards in a web page",
		Long: `view serves a web viewer for one run, or two side by side, from this
binary (every asset is embedded: it works offline).

It reads a swerve run directory (--traj_dir of swerve run: its
<instance_id>/result.json records, errors included), an <exp_name>.jsonl of
swerve, R2E-Gym or SWE-Factory, the rollouts JSONL of swerve collect or NeMo
Gym's ng_collect_rollouts, and mini-swe-agent's .traj.json (one file, or the
directory of its batch runs).

Pages: the run's overview (resolved / graded, accuracy, errors apart from
rewards, exit reasons, histograms of turns and tokens, cost, time) with a task
table you filter and sort, paged on the server, its state in the URL; a page
per task (every step with its thinking folded, action, observation, timings
and tokens; the patch as a diff; the test output with failing FAIL_TO_PASS and
PASS_TO_PASS tests marked; the reward with its reason and tamper findings;
links to the raw files); with two runs, A vs B per task, changed first.

Files are read again when they change, so a run in progress can be watched.
It listens on loopback unless --listen says otherwise; only files inside the
run directory are served.`,
		Example: `  swerve view ./run_logs/my_run
  swerve view ./run_logs/my_run/my_run.jsonl --listen 127.0.0.1:9000 --open
  swerve view out/rollouts.jsonl
  swerve view mini_runs/django__django-11099/django__django-11099.traj.json
  swerve view ./run_logs/baseline ./run_logs/new_prompt`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var runs []*view.Run
			for _, a := range args {
				r, err := view.Open(a)
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			return serveView(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), listen, open, runs)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", "127.0.0.1:8765", "address to serve on (host:port; port 0 picks a free one); keep it on loopback unless you mean to share the run")
	fs.BoolVar(&open, "open", false, "open the viewer in the default browser (xdg-open / open)")
	return cmd
}

func serveView(ctx context.Context, stdout, stderr io.Writer, listen string, open bool, runs []*view.Run) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := view.NewServer(log, runs...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("view: listen %s: %w", listen, err)
	}
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			fmt.Fprintf(stderr, "warning: serving on %s, reachable from other machines\n", ln.Addr())
		}
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(stdout, "swerve view: %s (Ctrl-C stops)\n", url)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	if open {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(stderr, "could not open a browser (%v); open %s yourself\n", err, url)
		}
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	return exec.Command(name, url).Start()
}
