package view

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/swerve-dev/swerve/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden screenshots under docs/view")

// browserRequired is set by .ci/run: a missing chromium is then a failure.
func browserRequired() bool { return os.Getenv("SWERVE_BROWSER_TESTS") == "1" }

// chromiumPath finds Debian's chromium.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if browserRequired() {
		t.Fatal("chromium not found and SWERVE_BROWSER_TESTS=1 (apt-get install -y chromium)")
	}
	t.Skip("chromium not found (apt-get install -y chromium; SWERVE_BROWSER_TESTS=1 makes this a failure)")
	return ""
}

// TestBrowser drives the viewer in headless Chromium: the overview loads,
// a filter and a sort change the URL and the rows, a trajectory shows every
// kind of step, the diff and the failing tests are marked, and screenshots
// of the three main pages match the golden PNGs under docs/view (also the
// screenshots in docs/view.md) within a tolerance.
//
// The golden images are written by this test itself with -update. That is
// acceptable here because their oracle is a person: whoever runs -update
// looks at the images (they are docs/view.md's screenshots) before committing
// them; the comparison then guards against unnoticed changes of layout.
func TestBrowser(t *testing.T) {
	exe := chromiumPath(t)
	root := t.TempDir()
	dirA, dirB := filepath.Join(root, "baseline"), filepath.Join(root, "new-prompt")
	genRun(t, dirA, 30, fewSteps)
	genRun(t, dirB, 30, fewSteps)
	// B resolves three tasks A does not, and loses one.
	for id, reward := range map[string]float64{"demo__http-0001": 1, "demo__orm-0002": 1, "demo__calc-0004": 1, "demo__cli-0003": 0} {
		setReward(t, filepath.Join(dirB, id, "result.json"), reward)
	}
	a, b := mustOpen(t, dirA), mustOpen(t, dirB)
	// Stable paths in the pictures.
	a.Path, b.Path = "/runs/baseline", "/runs/new-prompt"
	srv, err := NewServer(nil, a, b)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv) // loopback
	defer ts.Close()
	// swerve collect's rollouts: 12 tasks, 4 rollouts each (GRPO groups).
	rollouts := filepath.Join(root, "rollouts.jsonl")
	genRollouts(t, rollouts, 12, 4)
	rr := mustOpen(t, rollouts)
	rr.Path = "/runs/rollouts.jsonl"
	rsrv, err := NewServer(nil, rr)
	if err != nil {
		t.Fatal(err)
	}
	rts := httptest.NewServer(rsrv)
	defer rts.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoFirstRun,
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("font-render-hinting", "none"),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 900)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, c := context.WithTimeout(ctx, 20*time.Second)
		defer c()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		sctx, c := context.WithTimeout(ctx, 10*time.Second)
		defer c()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	waitURL := func(part string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			loc, err := chromedp.Run(ctx, chromedp.Location())
			if err == nil && strings.Contains(loc, part) && eval("document.readyState") == "complete" {
				return loc
			}
			if time.Now().After(deadline) {
				t.Fatalf("URL never had %q (last %q)", part, loc)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	rows := `Array.from(document.querySelectorAll('#tasks tbody tr[data-key]')).map(r => r.dataset.key).join(' ')`

	// The overview.
	step("open overview", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#tasks")))
	if got := eval(`document.querySelector('#resolved').textContent`); got != "8 / 26" {
		t.Errorf("resolved card %q, want 8 / 26", got)
	}
	if n := len(strings.Fields(eval(rows))); n != 30 {
		t.Errorf("%d rows, want 30", n)
	}
	if eval(`String(document.querySelectorAll('svg.hist rect').length > 0)`) != "true" {
		t.Error("no histogram bars")
	}
	// The header says which model (offline marked), dataset, scaffold,
	// start and settings.
	for sel, want := range map[string]string{
		"#info-model":    "replay/gen offline",
		"#info-dataset":  "demo/tasks.jsonl",
		"#info-scaffold": "r2egym, mini_swe_agent",
		"#info-started":  "2026-11-20 10:00:00 UTC",
	} {
		if got := eval(fmt.Sprintf(`document.querySelector(%q).textContent.trim()`, sel)); got != want {
			t.Errorf("%s says %q, want %q", sel, got, want)
		}
	}
	if got := eval(`document.querySelector('#info-model .badge.offline') !== null ? 'yes' : 'no'`); got != "yes" {
		t.Error("the offline model has no offline badge")
	}
	if got := eval(`document.querySelector('#info-settings').textContent`); !strings.Contains(got, "max_steps 40") || !strings.Contains(got, "temperature 0") {
		t.Errorf("settings %q", got)
	}
	// Why each 0 failed, and what the time column measures.
	why := `(key) => document.querySelector('#tasks tr[data-key="' + key + '"] td.why').textContent`
	for key, want := range map[string]string{"demo__http-0001": "FAIL_TO_PASS failed: 1", "demo__orm-0006": "box: the box would not open: container exited",
		"demo__calc-0000": "", "demo__http-0005": "tampered: the patch edits test infrastructure (conftest.py)"} {
		if got := eval(fmt.Sprintf(`(%s)(%q)`, why, key)); got != want {
			t.Errorf("why of %s %q, want %q", key, got, want)
		}
	}
	if got := eval(`document.querySelector('#time-head').textContent.trim()`); got != "agent time" {
		t.Errorf("time column headed %q", got)
	}
	shot(t, ctx, "overview")

	// Filter: choosing an outcome submits the form; the URL carries it.
	eval(`(() => { const s = document.querySelector('#f-outcome'); s.value = 'error'; s.dispatchEvent(new Event('change')); return '' })()`)
	loc := waitURL("outcome=error")
	if strings.Contains(loc, "q=") {
		t.Errorf("empty fields in the URL: %s", loc)
	}
	if got := eval(rows); got != "demo__calc-0020 demo__cli-0027 demo__http-0013 demo__orm-0006" {
		t.Errorf("error rows %q", got)
	}

	// Sort: the turns header sorts descending, then ascending.
	step("clear filter", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#tasks")))
	before := eval(rows)
	step("sort by turns", chromedp.Click(chromedp.CSS(`#tasks th a[href*="sort=turns"]`)))
	waitURL("sort=turns")
	after := eval(rows)
	if after == before {
		t.Error("sorting by turns left the rows as they were")
	}
	turns := eval(`Array.from(document.querySelectorAll('#tasks tbody tr td:nth-child(5)')).map(c => c.textContent).join(' ')`)
	if f := strings.Fields(turns); len(f) < 2 || f[0] < f[len(f)-1] {
		t.Errorf("turns not descending: %s", turns)
	}

	// A task: every step kind, thinking folded, the diff, the raw links.
	step("open task", chromedp.Navigate(ts.URL+"/task?key=demo__calc-0000"), chromedp.WaitVisible(chromedp.CSS("#steps")))
	for _, sel := range []string{"li.step.action", "li.step.format-error", "li.step.message", "li.step.submit",
		"details.thinking:not([open])", "details.observation", "#diff span.add", "#diff span.del", "#diff span.hunk", `#raw a[href$="agent.log"]`} {
		if eval(fmt.Sprintf(`String(document.querySelector(%q) !== null)`, sel)) != "true" {
			t.Errorf("task page has no %s", sel)
		}
	}
	if got := eval(`getComputedStyle(document.querySelector('#diff span.add')).backgroundColor`); got != "rgb(230, 255, 236)" {
		t.Errorf("added lines coloured %s", got)
	}
	step("expand all", chromedp.Click(chromedp.CSS("#expand")))
	if eval(`String(document.querySelector('details.thinking').open)`) != "true" {
		t.Error("expand all left the thinking folded")
	}
	step("collapse all", chromedp.Click(chromedp.CSS("#collapse")))
	// The trajectory comes before the patch and the tests; the prompts are
	// there, folded; the observations carry an exit badge, not their
	// wrapper.
	order := `(() => { const s = document.querySelector('#steps'), p = document.querySelector('#patch'), t = document.querySelector('#tests');
		return String(!!(s.compareDocumentPosition(p) & Node.DOCUMENT_POSITION_FOLLOWING) && !!(p.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING)) })()`
	if eval(order) != "true" {
		t.Error("the trajectory is not first")
	}
	if got := eval(`Array.from(document.querySelectorAll('#prompts details:not([open]) summary')).map(s => s.textContent.split(' (')[0]).join(', ')`); got != "system prompt, first user prompt" {
		t.Errorf("prompts %q", got)
	}
	if got := eval(`document.querySelector('#step-0 .badge.exit').textContent`); got != "exit 0" {
		t.Errorf("step 0's exit badge %q", got)
	}
	if got := eval(`String(Array.from(document.querySelectorAll('#steps pre')).some(p => p.textContent.includes('Exit code:') || p.textContent.includes('Execution output of')))`); got != "false" {
		t.Error("an observation keeps its wrapper lines")
	}
	eval(`(() => { window.scrollTo(0, 0); return '' })()`)
	shot(t, ctx, "task")
	eval(`(() => { document.querySelector('#step-1').scrollIntoView(); return '' })()`)
	shot(t, ctx, "trajectory")

	// Failing tests highlighted, in a test log folded until opened.
	step("open failing task", chromedp.Navigate(ts.URL+"/task?key=demo__http-0001"), chromedp.WaitVisible(chromedp.CSS("#steps")))
	if got := eval(`String(document.querySelector('#test-log').open)`); got != "false" {
		t.Error("the test log is open by default")
	}
	step("open the test log", chromedp.Click(chromedp.CSS("#test-log summary")), chromedp.WaitVisible(chromedp.CSS("#test-output")))
	if got := eval(`document.querySelector('#test-output .f2p-fail').textContent`); !strings.Contains(got, "test_empty") {
		t.Errorf("FAIL_TO_PASS highlight %q", got)
	}
	if got := eval(`getComputedStyle(document.querySelector('#test-output .f2p-fail')).backgroundColor`); got != "rgb(255, 215, 210)" {
		t.Errorf("failing test coloured %s", got)
	}
	if eval(`String(document.querySelector('#test-output .p2p-fail') !== null)`) != "true" {
		t.Error("no PASS_TO_PASS highlight")
	}
	eval(`(() => { document.querySelector('#patch').scrollIntoView(); return '' })()`)
	shot(t, ctx, "tests")

	// A vs B: changed first.
	step("open compare", chromedp.Navigate(ts.URL+"/compare"), chromedp.WaitVisible(chromedp.CSS("#pairs")))
	first := eval(`Array.from(document.querySelectorAll('#pairs tbody tr')).slice(0, 4).map(r => r.cells[0].textContent).join(' ')`)
	if first != "demo__cli-0003 demo__calc-0004 demo__http-0001 demo__orm-0002" {
		t.Errorf("compare starts %q, want the worse one, then the better ones", first)
	}
	// Instance names are links to the task.
	if got := eval(`document.querySelector('#pairs tbody tr td.instance a').getAttribute('href')`); got != "/task?key=demo__cli-0003" {
		t.Errorf("first instance links to %q", got)
	}
	shot(t, ctx, "compare")
	step("follow an instance link", chromedp.Click(chromedp.CSS(`#pairs tbody tr td.instance a`)))
	waitURL("/task?key=demo__cli-0003")

	// Rollouts: one row per task with pass@k, mean and spread; the run's
	// pass@1 and pass@k.
	step("open rollouts", chromedp.Navigate(rts.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#groups")))
	if got := eval(`document.querySelector('#pass1').textContent + ' ' + document.querySelector('#passk').textContent`); got != "44.4% 70.8%" {
		t.Errorf("pass@1 and pass@k cards %q", got)
	}
	if got := eval(`String(document.querySelectorAll('#groups tbody tr').length)`); got != "12" {
		t.Errorf("%s group rows, want 12", got)
	}
	cells := `(key) => Array.from(document.querySelector('#groups tr[data-key="' + key + '"]').cells).slice(1, 8).map(c => c.textContent.trim()).join(' | ')`
	for key, want := range map[string]string{
		"demo__calc-0000": "4 | 0 | 0.00 | 0.00 | 0.00–0.00 | 0.00 | 0.00",
		"demo__calc-0001": "3 +1 error | 1 | 0.33 | 0.47 | 0.00–1.00 | 0.33 | 1.00",
		"demo__calc-0002": "4 | 3 | 0.75 | 0.43 | 0.00–1.00 | 0.75 | 1.00",
	} {
		if got := eval(fmt.Sprintf(`(%s)(%q)`, cells, key)); got != want {
			t.Errorf("group %s: %q, want %q", key, got, want)
		}
	}
	if got := eval(`String(document.querySelectorAll('#groups tr[data-key="demo__calc-0002"] td.rollouts a').length)`); got != "4" {
		t.Errorf("%s rollout links in a group, want 4", got)
	}
	eval(`(() => { document.querySelector('#stats').scrollIntoView(); return '' })()`)
	shot(t, ctx, "groups")
	step("list every rollout", chromedp.Click(chromedp.CSS("#show-rollouts")))
	waitURL("rollouts=1")
	if n := len(strings.Fields(eval(rows))); n != 48 {
		t.Errorf("%d rollout rows, want 48", n)
	}

	// A text-mode rollout: the reply shows the command, so no action block;
	// the observations lose <returncode>/<output>, the status is a badge.
	step("open a rollout", chromedp.Navigate(rts.URL+"/task?key="+url.QueryEscape("demo__calc-0002#1")), chromedp.WaitVisible(chromedp.CSS("#steps")))
	if got := eval(`String(document.querySelectorAll('#steps div.action').length)`); got != "0" {
		t.Errorf("%s action blocks under replies that show the command", got)
	}
	if got := eval(`String(document.body.innerText.includes('<returncode>') || document.body.innerText.includes('<output>'))`); got != "false" {
		t.Error("raw <returncode>/<output> tags on the page")
	}
	if got := eval(`Array.from(document.querySelectorAll('#steps .badge.exit')).map(b => b.textContent + ':' + b.classList.contains('exit-ok')).join(' ')`); got != "exit 0:true exit 1:false" {
		t.Errorf("exit badges %q", got)
	}
	step("open the prompts", chromedp.Click(chromedp.CSS("#prompts details.prompt-system summary")))
	shot(t, ctx, "rollout")
}

func setReward(t *testing.T, path string, reward float64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["reward"] = reward
	if reward == 1 {
		rec["reward_reason"] = "resolved"
	}
	out, _ := json.Marshal(rec)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shot compares the viewport with docs/view/<name>.png, or writes it with
// -update. Pixels may differ by a little (antialiasing); at most 0.1% of
// them by more than that. (Chromium renders these pages to the same pixels
// run after run here; the slack is for font hinting on another machine.)
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	sctx, c := context.WithTimeout(ctx, 20*time.Second)
	defer c()
	got, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(testutil.RepoRoot(t), "docs", "view", name+".png")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (go test -run TestBrowser ./internal/view -update writes it)", name, err)
	}
	frac, err := pixelDiff(got, want)
	t.Logf("screenshot %s: %.3f%% of pixels differ from the golden", name, 100*frac)
	if err != nil || frac > 0.001 {
		bad := filepath.Join(os.TempDir(), "swerve-view-"+name+".png")
		_ = os.WriteFile(bad, got, 0o644)
		t.Errorf("screenshot %s differs from %s: %.2f%% of pixels, %v (this run's is %s)", name, path, 100*frac, err, bad)
	}
}

// pixelDiff is the fraction of pixels where some channel differs by more
// than 8 of 255.
func pixelDiff(a, b []byte) (float64, error) {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return 1, err
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 1, err
	}
	if ia.Bounds() != ib.Bounds() {
		return 1, fmt.Errorf("size %v, golden %v", ia.Bounds(), ib.Bounds())
	}
	return diffImages(ia, ib), nil
}

func diffImages(a, b image.Image) float64 {
	r := a.Bounds()
	bad := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			if far(r1, r2) || far(g1, g2) || far(b1, b2) {
				bad++
			}
		}
	}
	return float64(bad) / float64(r.Dx()*r.Dy())
}

func far(x, y uint32) bool {
	d := int(x>>8) - int(y>>8)
	return d > 8 || d < -8
}
