package tap

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// ringable reports whether fd is a pipe that ring can wake: a FIFO whose
// /proc/self/fd entry opens for writing (it may not in a sandbox that hides
// /proc). The probe opens and closes a second write end, which changes
// nothing for the pipe's reader while another writer holds it, and at worst
// hastens an end of file that was due anyway.
func ringable(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return false
	}
	w, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	unix.Close(w)
	return true
}

// ring wakes a read blocked on the pipe fd by writing one byte into it
// through a second write end. If the pipe is full the write fails, which is
// fine: a full pipe does not block its reader.
func ring(fd int) {
	w, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unix.Write(w, []byte{'\n'})
	unix.Close(w)
}
