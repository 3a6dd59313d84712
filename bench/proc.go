package bench

import (
	"fmt"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// Process accounting for the measurements: CPU time and resident memory of
// this process (getrusage, /proc/self/status) or of a server process of its
// own (/proc/PID/stat and /proc/PID/status), and the machine's load average.

// cpuTime returns the CPU time (user and system) this process has used,
// from getrusage(RUSAGE_SELF).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcCPU returns the CPU time (utime + stime of /proc/PID/stat) process pid
// has used. Its resolution is the kernel's clock tick (10 ms).
func ProcCPU(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}

// ProcRSS returns the resident set size (VmRSS of /proc/PID/status) of
// process pid in bytes; pid 0 means this process.
func ProcRSS(pid int) (int64, error) {
	var p procfs.Proc
	var err error
	if pid == 0 {
		p, err = procfs.Self()
	} else {
		p, err = procfs.NewProc(pid)
	}
	if err != nil {
		return 0, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, err
	}
	return int64(st.VmRSS), nil
}

// LoadAvg returns the 1, 5 and 15 minute load averages of /proc/loadavg as
// "1.23 0.98 0.75", or "?" if they cannot be read.
func LoadAvg() string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return "?"
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
}

// Load1 returns the 1-minute load average, or -1 if it cannot be read.
func Load1() float64 {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return -1
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return -1
	}
	return l.Load1
}
