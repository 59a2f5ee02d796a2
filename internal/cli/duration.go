package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// seconds is a duration flag that also takes a plain number of seconds, as
// the Python tools' --timeout / --eval_timeout do: "300" and "5m" agree.
type seconds time.Duration

func (s *seconds) String() string { return time.Duration(*s).String() }
func (s *seconds) Type() string   { return "seconds" }

func (s *seconds) Set(v string) error {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 {
			return fmt.Errorf("negative time %q", v)
		}
		*s = seconds(time.Duration(n * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is neither a number of seconds nor a duration like 90s or 5m", v)
	}
	if d < 0 {
		return fmt.Errorf("negative time %q", v)
	}
	*s = seconds(d)
	return nil
}

// secondsVar defines a seconds flag.
func secondsVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*seconds)(p), name, usage+" (seconds, or a duration such as 90s or 5m)")
}

// atLeastOne is an int flag that refuses 0 and negative numbers at parse
// time, naming the flag: a worker or concurrency count below 1 is a
// mistake, not a request for one.
type atLeastOne int

func (n *atLeastOne) String() string { return strconv.Itoa(int(*n)) }
func (n *atLeastOne) Type() string   { return "int" }

func (n *atLeastOne) Set(v string) error {
	i, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	if i < 1 {
		return fmt.Errorf("%d: must be at least 1", i)
	}
	*n = atLeastOne(i)
	return nil
}

// workersVar defines a count flag (workers, concurrency, jobs) that must be
// at least 1.
func workersVar(fs *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fs.Var((*atLeastOne)(p), name, usage)
}

// workersVarP is workersVar with a one-letter shorthand.
func workersVarP(fs *pflag.FlagSet, p *int, name, short string, value int, usage string) {
	*p = value
	fs.VarP((*atLeastOne)(p), name, short, usage)
}
