package shim

import (
	"fmt"
	"sync"
)

// cappedBuffer keeps the first and last bytes of a stream once it exceeds
// its cap, counting what it dropped from the middle. It is safe for
// concurrent writers (stdout and stderr share it).
type cappedBuffer struct {
	mu    sync.Mutex
	limit int // < 0: keep everything
	head  []byte
	tail  []byte // ring buffer of the last tailCap bytes once head is full
	tpos  int    // next write position in tail once it is full
	full  bool   // tail has wrapped
	total int64
}

func newCappedBuffer(limit int) *cappedBuffer { return &cappedBuffer{limit: limit} }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if b.limit < 0 {
		b.head = append(b.head, p...)
		return n, nil
	}
	headCap := b.limit / 2
	if room := headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	tailCap := b.limit - headCap
	if tailCap == 0 || len(p) == 0 {
		return n, nil
	}
	if len(p) >= tailCap {
		b.tail = append(b.tail[:0], p[len(p)-tailCap:]...)
		b.tpos, b.full = 0, true
		return n, nil
	}
	if !b.full {
		if room := tailCap - len(b.tail); len(p) <= room {
			b.tail = append(b.tail, p...)
			if len(b.tail) == tailCap {
				b.full = true
			}
			return n, nil
		}
		room := tailCap - len(b.tail)
		b.tail = append(b.tail, p[:room]...)
		p = p[room:]
		b.full, b.tpos = true, 0
	}
	for len(p) > 0 {
		k := copy(b.tail[b.tpos:], p)
		p = p[k:]
		b.tpos = (b.tpos + k) % tailCap
	}
	return n, nil
}

// Result returns the kept bytes, with a marker where the middle was cut, and
// how many bytes were dropped.
func (b *cappedBuffer) Result() (out []byte, total, elided int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := int64(len(b.head) + len(b.tail))
	if !b.full || b.total == kept {
		out = make([]byte, 0, kept)
		out = append(out, b.head...)
		out = append(out, b.tail...)
		return out, b.total, 0
	}
	elided = b.total - kept
	marker := fmt.Sprintf("\n[... %d bytes of output elided ...]\n", elided)
	out = make([]byte, 0, int(kept)+len(marker))
	out = append(out, b.head...)
	out = append(out, marker...)
	out = append(out, b.tail[b.tpos:]...)
	out = append(out, b.tail[:b.tpos]...)
	return out, b.total, elided
}
