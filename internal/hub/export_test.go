package hub

import "time"

func init() { retryWait = 5 * time.Millisecond }
