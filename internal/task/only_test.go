package task

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestLoadInstanceIDsSameTasks checks that loading with InstanceIDs, which
// skips the other rows undecoded, gives exactly the tasks a full load gives
// for those ids, in every format.
func TestLoadInstanceIDsSameTasks(t *testing.T) {
	files := []string{
		filepath.Join("testdata", "r2e.jsonl"),
		filepath.Join("testdata", "swefactory_transferred.json"),
		filepath.Join("testdata", "swesmith_list.json"),
	}
	if os.Getenv("SWERVE_SHARED") != "" || sharedPresent() {
		data := filepath.Join(testutil.SharedDir(t), "data")
		files = append(files,
			filepath.Join(data, "swebench", "lite-test.parquet"),
			filepath.Join(data, "swebench", "multilingual-test.parquet"))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			full, err := Load(context.Background(), path, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n := len(full.Tasks)
			picks := []int{0, n / 2, n - 1}
			for _, i := range picks {
				want := full.Tasks[i]
				got, err := Load(context.Background(), path, LoadOptions{InstanceIDs: []string{want.InstanceID}})
				if err != nil {
					t.Fatalf("%s: %v", want.InstanceID, err)
				}
				sel, err := Select(got.Tasks, Selection{InstanceIDs: []string{want.InstanceID}})
				if err != nil {
					t.Fatalf("%s: %v", want.InstanceID, err)
				}
				if len(sel) != 1 || !reflect.DeepEqual(sel[0], want) {
					t.Errorf("%s: the one-row load differs from the full load's task", want.InstanceID)
				}
				if got.Format != full.Format || got.Dialect != full.Dialect {
					t.Errorf("%s: format/dialect %s/%s, full load %s/%s", want.InstanceID, got.Format, got.Dialect, full.Format, full.Dialect)
				}
				// R2E-Gym rows carry no instance_id field (the id is made
				// from others): those files are read whole.
				if full.Dialect != DialectR2E && len(got.Tasks) >= n && n > 1 {
					t.Errorf("%s: decoded %d of %d rows; want only the matching one", want.InstanceID, len(got.Tasks), n)
				}
			}
		})
	}
}

// sharedPresent reports whether ../shared/data is there (the parquet cases
// then run; SharedDir skips or fails the test when it is not).
func sharedPresent() bool {
	_, err := os.Stat(filepath.Join("..", "..", "..", "shared", "data"))
	return err == nil
}

func TestSplitList(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		ok   bool
	}{
		{`[]`, nil, true},
		{" \n[ ] \n", nil, true},
		{`[{"a":1}]`, []string{`{"a":1}`}, true},
		{`[ {"a":"x,]}\"{"} , {"b":[1,{"c":2}]} ,3,"s"]`, []string{`{"a":"x,]}\"{"}`, `{"b":[1,{"c":2}]}`, `3`, `"s"`}, true},
		{"\xef\xbb\xbf[{\"a\":1},\n{\"b\":2}\n]\n", []string{`{"a":1}`, `{"b":2}`}, true},
		{`[{"a":1}] x`, nil, false},        // data after the list
		{`[{"a":1}`, nil, false},           // no closing bracket
		{`[{"a":"1}]`, nil, false},         // unterminated string
		{`[{"a":1},,{"b":2}]`, nil, false}, // empty element
		{`{"a":1}`, nil, false},            // not a list
	}
	for _, tc := range cases {
		spans, ok := splitList([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("splitList(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		var got []string
		for _, sp := range spans {
			got = append(got, tc.in[sp[0]:sp[1]])
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
