// rusage runs one command with this process's stdin, stdout and stderr and then prints, on fd 3, one JSON line:
// its wall time and the CPU time that the kernel accounted to it (wait4's rusage, microsecond resolution).
// Node's child_process reports no rusage, and /proc/<pid>/stat counts in 10 ms ticks. Used by scripts/bench/peer.ts.
// Usage: rusage <command> [args...]   (exit status: the command's)
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rusage <command> [args...]")
		os.Exit(2)
	}
	report := os.NewFile(3, "report")
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	started := time.Now()
	err := cmd.Run()
	wall := time.Since(started)
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok {
			fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
			os.Exit(127)
		}
		code = exit.ExitCode()
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	us := func(t syscall.Timeval) int64 { return t.Sec*1_000_000 + t.Usec }
	fmt.Fprintf(report, "{\"wallUs\":%d,\"userUs\":%d,\"sysUs\":%d,\"maxRssKiB\":%d,\"code\":%d}\n",
		wall.Microseconds(), us(ru.Utime), us(ru.Stime), ru.Maxrss, code)
	os.Exit(code)
}
