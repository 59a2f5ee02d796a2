package shim

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// freezeRounds bounds how often killTree lists the tree while it stops it:
// each round stops what the last one found, and a stopped process forks no
// more, so a round that finds nothing new ends it; the bound only keeps a
// tree that forks faster than it can be listed from stalling the kill.
const freezeRounds = 8

// killTree SIGKILLs process group pgid and every descendant of its leader,
// including those that moved to a process group or session of their own;
// with more, also the processes more names and their descendants. The
// leader itself goes with its group; a caller that knows the leader is not
// yet reaped (so that its pid cannot name another process) may name it in
// more, for a leader that left its group.
//
// It stops them all (SIGSTOP, which no process can catch) before it kills
// any. Killed one by one, the first to die would be news to the rest for a
// moment: a child watching for its parent's end could notice it, and print
// or start something, before its own SIGKILL came; and a process could
// fork after the listing. A stopped process does neither.
func killTree(pgid int, more ...int) {
	if pgid <= 1 {
		return
	}
	// The group first, in one call: then only processes outside it are
	// left to list, and none of the group forks in the meantime.
	if syscall.Kill(-pgid, syscall.SIGSTOP) == syscall.ESRCH && len(more) == 0 &&
		syscall.Kill(pgid, 0) == syscall.ESRCH {
		return // an empty group whose leader is gone leaves nothing to find
	}
	// Never the helper: stopped, nothing would wake it.
	stopped := map[int]bool{os.Getpid(): true}
	for range freezeRounds {
		fresh := false
		for _, pid := range descendants(pgid, more...) {
			if !stopped[pid] {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				stopped[pid] = true
				fresh = true
			}
		}
		if !fresh {
			break
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	delete(stopped, os.Getpid())
	for pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Anything in the group that was forked while we looked.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// descendants lists, from /proc, the processes in root's process group,
// the processes in more, and every process below root or below one in
// more; root itself only if it is in more. It returns nil where /proc is
// not readable.
func descendants(root int, more ...int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	group := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, pgrp, ok := statParents(pid)
		if !ok {
			continue
		}
		parent[pid], group[pid] = ppid, pgrp
	}
	named := make(map[int]bool, len(more))
	for _, m := range more {
		named[m] = true
	}
	var out []int
	for pid := range parent {
		if named[pid] {
			out = append(out, pid)
			continue
		}
		if pid == root {
			continue
		}
		if group[pid] == root {
			out = append(out, pid)
			continue
		}
		for p, hops := parent[pid], 0; p > 1 && hops < 1000; p, hops = parent[p], hops+1 {
			if p == root || named[p] {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// statParents reads the parent pid and process group of pid from
// /proc/PID/stat.
func statParents(pid int) (ppid, pgrp int, ok bool) {
	f, _, ok := procStat(pid)
	if !ok || len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return ppid, pgrp, err1 == nil && err2 == nil
}

// procStat returns the fields of /proc/PID/stat after the command name
// (state first), and the state letter.
func procStat(pid int) ([]string, string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, "", false
	}
	f := strings.Fields(s[i+2:])
	if len(f) == 0 {
		return nil, "", false
	}
	return f, f[0], true
}
