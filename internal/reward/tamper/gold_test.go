package tamper

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// goldFlags lists, per dataset, the gold patches Check is known to flag
// and why each is right to: "instance id: kind path". Anything else it
// flags on a gold patch is a false alarm and fails the test.
var goldFlags = map[string][]string{}

// TestGoldPatchesNotFlagged runs Check over every gold patch of SWE-bench
// Verified, Lite (test and dev) and Multilingual and prints how many it
// flags, per dataset.
func TestGoldPatchesNotFlagged(t *testing.T) {
	shared := testutil.SharedDir(t)
	for _, name := range []string{"verified-test", "lite-test", "lite-dev", "multilingual-test"} {
		t.Run(name, func(t *testing.T) {
			res, err := task.Load(context.Background(), filepath.Join(shared, "data", "swebench", name+".parquet"), task.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			allowed := map[string]bool{}
			for _, s := range goldFlags[name] {
				allowed[s] = true
			}
			flagged, testPatches := 0, 0
			var unexpected []string
			for i := range res.Tasks {
				tk := &res.Tasks[i]
				// The check is not blind: the test patches, graded as if
				// they were the model's (nothing would reset them), touch
				// test files.
				bare := *tk
				bare.TestPatch = ""
				if len(Check(&bare, tk.TestPatch)) > 0 {
					testPatches++
				}
				fs := Check(tk, tk.Patch)
				if len(fs) > 0 {
					flagged++
				}
				for _, f := range fs {
					key := tk.InstanceID + ": " + string(f.Kind) + " " + f.Path
					if !allowed[key] {
						unexpected = append(unexpected, key+" ("+f.What+")")
					}
				}
			}
			sort.Strings(unexpected)
			t.Logf("%s: %d gold patches, %d flagged (%d justified findings); %d of the test patches flagged as a model's patch", name, len(res.Tasks), flagged, len(goldFlags[name]), testPatches)
			if testPatches < len(res.Tasks)*9/10 {
				t.Errorf("only %d of %d test patches flagged when graded as a model's patch", testPatches, len(res.Tasks))
			}
			if len(unexpected) > 0 {
				t.Errorf("%d false alarms on gold patches:\n%s", len(unexpected), strings.Join(unexpected, "\n"))
			}
		})
	}
}

// BenchmarkCheck times the static check over Verified's gold patches.
func BenchmarkCheck(b *testing.B) {
	res, err := task.Load(context.Background(), filepath.Join(testutil.SharedDir(b), "data", "swebench", "verified-test.parquet"), task.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk := &res.Tasks[i%len(res.Tasks)]
		Check(tk, tk.Patch)
	}
}
