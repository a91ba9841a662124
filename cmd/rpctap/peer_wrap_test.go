package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// wrapMain is the test binary run as `rpctap-wrap [-in F] [-out F]
// [-status F [-err F]] -- CHILD [ARGS...]` (TestMain registers it): a plain tee
// between its parent and CHILD. It copies its stdin to the child's and to
// -in, the child's stdout to its own and to -out, passes stderr through,
// forwards the signals a parent ends a child with, and ends the way the
// child did. The peer matrix puts it under `rpctap record` to see the bytes
// on the wire without rpctap.
//
// With -status F it is no tee but a keeper of CHILD's exit status, for a
// replay whose status the parent drops: it writes how CHILD ended to F
// ("exit N" or "signal NAME") and CHILD's stderr to -err, even when the parent SIGKILLs it (the ACP Go
// SDK example client ends its agent so): a second rpctap-wrap, in a process
// group of its own and holding the same stdin and stdout, runs CHILD and
// writes F, so killing the first leaves CHILD to end as it would.
func wrapMain(args []string) int {
	var in, out, status, errFile string
	keeper := false
	for len(args) > 0 && args[0] != "--" {
		if args[0] == "-keeper" {
			keeper, args = true, args[1:]
			continue
		}
		if len(args) < 2 {
			break
		}
		switch args[0] {
		case "-in":
			in = args[1]
		case "-out":
			out = args[1]
		case "-status":
			status = args[1]
		case "-err":
			errFile = args[1]
		default:
			fmt.Fprintf(os.Stderr, "rpctap-wrap: unknown flag %s\n", args[0])
			return 2
		}
		args = args[2:]
	}
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "usage: rpctap-wrap [-in F] [-out F] [-status F [-keeper]] -- CHILD [ARGS...]")
		return 2
	}
	sink := func(name string) io.Writer {
		if name == "" {
			return io.Discard
		}
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rpctap-wrap:", err)
			os.Exit(2)
		}
		return f
	}
	if status != "" {
		return keepStatus(status, errFile, keeper, args[1:])
	}
	inW, outW := sink(in), sink(out)
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stderr = os.Stderr
	childIn, _ := cmd.StdinPipe()
	childOut, _ := cmd.StdoutPipe()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rpctap-wrap:", err)
		return 127
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	go func() {
		// What the child read: each chunk once it was written to it.
		buf := make([]byte, 32<<10)
		for {
			n, err := os.Stdin.Read(buf)
			if n > 0 {
				if _, werr := childIn.Write(buf[:n]); werr != nil {
					break
				}
				inW.Write(buf[:n])
			}
			if err != nil {
				break
			}
		}
		childIn.Close()
	}()
	// What the child wrote, all of it, whether or not the parent still
	// reads.
	buf := make([]byte, 32<<10)
	parentGone := false
	for {
		n, err := childOut.Read(buf)
		if n > 0 {
			outW.Write(buf[:n])
			if !parentGone {
				if _, werr := os.Stdout.Write(buf[:n]); werr != nil {
					parentGone = true
				}
			}
		}
		if err != nil {
			break
		}
	}
	os.Stdout.Close()
	err := cmd.Wait()
	signal.Stop(sigs)
	return endLike(err, "")
}

// keepStatus runs argv with this process's stdin, stdout and stderr and
// writes how it ended to status. The outer rpctap-wrap (keeper false) runs
// the inner one (keeper true) in a process group of its own, which runs
// argv; signals go down the chain.
func keepStatus(status, errFile string, keeper bool, argv []string) int {
	var cmd *exec.Cmd
	if keeper {
		cmd = exec.Command(argv[0], argv[1:]...)
	} else {
		cmd = exec.Command("rpctap-wrap", append([]string{"-keeper", "-status", status, "-err", errFile, "--"}, argv...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if keeper && errFile != "" {
		f, err := os.Create(errFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rpctap-wrap:", err)
			return 2
		}
		defer f.Close()
		cmd.Stderr = f
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rpctap-wrap:", err)
		return 127
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	if !keeper {
		status = ""
	}
	return endLike(err, status)
}

// endLike writes how a child ended (its Wait error) to status, if named,
// and ends this process the same way: the same exit code, or the same
// signal.
func endLike(err error, status string) int {
	ended, code := "exit 0", 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			if status != "" {
				writeStatus(status, "signal "+signalName(ws.Signal()))
			}
			signal.Reset(ws.Signal())
			syscall.Kill(os.Getpid(), ws.Signal())
			select {} // the signal ends this process
		}
		ended, code = fmt.Sprintf("exit %d", ee.ExitCode()), ee.ExitCode()
	} else if err != nil {
		ended, code = "exit 127", 127
	}
	if status != "" {
		writeStatus(status, ended)
	}
	return code
}

// writeStatus writes the file whole or not at all (a reader polls for it).
func writeStatus(name, ended string) {
	if os.WriteFile(name+".tmp", []byte(ended+"\n"), 0o644) == nil {
		os.Rename(name+".tmp", name)
	}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return fmt.Sprint(int(s))
}
