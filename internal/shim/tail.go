package shim

import "sync"

// TailBuffer keeps the last Max bytes written to it; backends use it to hold
// the helper's stderr for error messages. The zero value keeps 8 KiB.
type TailBuffer struct {
	Max int

	mu sync.Mutex
	b  []byte
}

func (w *TailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	limit := w.Max
	if limit <= 0 {
		limit = 8 << 10
	}
	w.b = append(w.b, p...)
	if len(w.b) > limit {
		w.b = append(w.b[:0], w.b[len(w.b)-limit:]...)
	}
	return len(p), nil
}

func (w *TailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
