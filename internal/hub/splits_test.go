package hub

import (
	"reflect"
	"testing"
)

func TestSplitFiles(t *testing.T) {
	cases := []struct {
		name    string
		files   []string
		configs []configSpec
		want    map[string][]string
	}{
		{"sharded names", []string{"README.md", "data/test-00000-of-00001.parquet", "data/dev-00000-of-00001.parquet"}, nil,
			map[string][]string{"test": {"data/test-00000-of-00001.parquet"}, "dev": {"data/dev-00000-of-00001.parquet"}}},
		{"keyword in file name", []string{"test.parquet", "my_train.jsonl", "notes.txt", "latest.json"}, nil,
			map[string][]string{"test": {"test.parquet"}, "train": {"my_train.jsonl"}}},
		{"keyword in folder wins", []string{"eval/a.parquet", "train.parquet"}, nil,
			map[string][]string{"test": {"eval/a.parquet"}}},
		{"no keyword: all train", []string{"rows.jsonl", ".hidden/test.json", "__pycache__/test.json"}, nil,
			map[string][]string{"train": {"rows.jsonl"}}},
		{"README configs", []string{"x/a.parquet", "x/b.parquet", "y/test.parquet"},
			[]configSpec{{Name: "other", DataFiles: "y/*"}, {Name: "default", DataFiles: []any{map[string]any{"split": "lite", "path": "x/*.parquet"}}}},
			map[string][]string{"lite": {"x/a.parquet", "x/b.parquet"}}},
		{"README configs with ** and a list", []string{"a/b/c.parquet", "a/d.parquet"},
			[]configSpec{{Name: "default", DataFiles: []any{map[string]any{"split": "test", "path": []any{"a/**/*.parquet"}}}}},
			map[string][]string{"test": {"a/b/c.parquet", "a/d.parquet"}}},
	}
	for _, tc := range cases {
		got, _ := splitFiles(tc.files, tc.configs, "")
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
