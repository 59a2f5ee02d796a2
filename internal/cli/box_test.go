package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	_ "github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestExecSampleLocal(t *testing.T) {
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	data := tasksSampleDataset(t)
	out, _, err := execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "sample__calc-1", "--backend", "local", "--",
		"git status --porcelain; git rev-list --count HEAD; python3 -c 'import calc; print(calc.median([1, 2, 3, 4]))'")
	if err != nil {
		t.Fatal(err)
	}
	if out != "1\n3\n" {
		t.Errorf("exec output %q; want a clean one-commit repo and the buggy median (3)", out)
	}
	_, _, err = execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "sample__calc-1", "--backend", "local", "--", "exit 9")
	if ee, ok := err.(exitError); !ok || ee.code != 9 {
		t.Errorf("exec exit 9: err = %v, want exit status 9", err)
	}
	_, _, err = execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "sample__calc-1", "--backend", "local", "--timeout", "500ms", "--", "sleep 30")
	if ee, ok := err.(exitError); !ok || ee.code != 124 {
		t.Errorf("exec timeout: err = %v, want exit status 124", err)
	}
	_, _, err = execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "nope", "--backend", "local", "--", "true")
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("exec of an unknown task: %v", err)
	}
}

// TestRealTasksBoxes opens the box of each real SWE-bench Verified task that
// ../shared/realtasks builds, the way a user would: the row from the
// dataset's parquet, its image by the harness's own name, never pulled. CI
// builds the images and sets SWERVE_REALTASKS=1, which makes this mandatory.
func TestRealTasksBoxes(t *testing.T) {
	shared := testutil.SharedDir(t)
	required := os.Getenv("SWERVE_REALTASKS") == "1"
	if err := docker.Probe(t.Context()); err != nil {
		if required {
			t.Fatalf("SWERVE_REALTASKS=1 but %v", err)
		}
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	f, err := os.Open(filepath.Join(shared, "realtasks", "instances.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parquet := filepath.Join(shared, "data", "swebench", "verified-test.parquet")
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		var row struct {
			InstanceID string `json:"instance_id"`
			BaseCommit string `json:"base_commit"`
			Image      string `json:"image"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		n++
		t.Run(row.InstanceID, func(t *testing.T) {
			if _, _, err := execTasksCLI(t, "exec", "--dataset", parquet, "--instance_id", row.InstanceID, "--pull", "never", "--", "true"); err != nil {
				if required {
					t.Fatalf("SWERVE_REALTASKS=1 but the box of %s did not open (build the images with ../shared/realtasks/build.sh): %v", row.Image, err)
				}
				t.Skipf("image %s not built (../shared/realtasks/build.sh): %v", row.Image, err)
			}
			out, _, err := execTasksCLI(t, "exec", "--dataset", parquet, "--instance_id", row.InstanceID, "--pull", "never", "--",
				"cd /testbed && git rev-parse HEAD && git status --porcelain && python -c 'import django; print(django.__file__)'")
			if err != nil {
				t.Fatal(err)
			}
			want := row.BaseCommit + "\n/testbed/django/__init__.py\n"
			if out != want {
				t.Errorf("in the box of %s: %q; want HEAD at the base commit, a clean tree and django from /testbed (%q)", row.Image, out, want)
			}
		})
	}
	if n != 5 {
		t.Errorf("%d real tasks, want 5", n)
	}
}
