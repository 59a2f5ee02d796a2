package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkBuildRunBookkeeping runs n instances whose builds fail at once
// (no engine work), so what is measured is the bookkeeping around them:
// status files, logs and the aggregate files. The time per instance must
// not grow with n.
func BenchmarkBuildRunBookkeeping(b *testing.B) {
	for _, n := range []int{100, 400, 1600} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("o__r-%d", i)
			}
			tasks := fakeTasks(ids...)
			for b.Loop() {
				out := b.TempDir()
				if _, err := Run(context.Background(), Options{Tasks: tasks, Output: out, Stem: "in", MaxIterations: 1, Workers: 2, Engine: &fakeEngine{err: errNoBuild}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1e3, "µs/instance")
		})
	}
}

// BenchmarkBuildWriteAggregates writes the aggregate files for n proven
// instances: bytes allocated per instance must stay flat as n grows (the
// datasets are streamed, not held).
func BenchmarkBuildWriteAggregates(b *testing.B) {
	for _, n := range []int{500, 2000, 8000} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("o__r-%d", i)
			}
			tasks := fakeTasks(ids...)
			out := b.TempDir()
			for _, id := range ids {
				d := InstanceDir(out, id)
				if err := writeJSON(filepath.Join(d, FileStatus), Status{InstanceID: id, Status: StatusSuccess, DockerImage: ImageTag(id)}); err != nil {
					b.Fatal(err)
				}
				for _, f := range []string{FileDockerfile, FileRunTests} {
					if err := os.WriteFile(filepath.Join(d, f), []byte("FROM scratch\n"), 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := WriteAggregates(out, "in", tasks, AggregateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1e3, "µs/instance")
		})
	}
}
