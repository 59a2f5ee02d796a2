package stop

import "testing"

func TestChan(t *testing.T) {
	var never Chan
	if never.Requested() {
		t.Error("the nil Chan reports a stop")
	}
	select {
	case <-never.Done():
		t.Error("the nil Chan's Done is ready")
	default:
	}
	c := make(chan struct{})
	s := Chan(c)
	if s.Requested() {
		t.Error("stop reported before the channel closed")
	}
	close(c)
	if !s.Requested() {
		t.Error("stop not reported after the channel closed")
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done not ready after the channel closed")
	}
}
