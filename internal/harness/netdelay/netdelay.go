// Package netdelay delays the packets a container sends, from the host,
// without tc netem: an iptables NFQUEUE rule in the container's network
// namespace (made by the caller, from the node's network helper) hands every
// outgoing packet to a netfilter queue, and this package, holding a netlink
// socket opened in the container's network namespace, accepts each packet
// only after its delay (the mean plus normally distributed jitter). Kernels
// built without sch_netem (this project's CI machines among them) still have
// NFQUEUE.
//
// Only packet metadata crosses into user space (NFQNL_COPY_META); verdicts
// are never anything but accept. Stop removes nothing in the container: the
// caller deletes its iptables rule first (the rule uses --queue-bypass, so
// with no listener packets pass), then calls Stop, which waits until every
// held packet has been released.
package netdelay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// nfnetlink_queue constants (linux/netfilter/nfnetlink_queue.h).
const (
	nfnlSubsysQueue   = 3
	nfqnlMsgPacket    = 0
	nfqnlMsgVerdict   = 1
	nfqnlMsgConfig    = 2
	nfqaCfgCmd        = 1
	nfqaCfgParams     = 2
	nfqaPacketHdr     = 1
	nfqaVerdictHdr    = 2
	nfqnlCfgCmdBind   = 1
	nfqnlCopyMeta     = 1
	nfAccept          = 1
	nlmsgHdrLen       = 16
	nfgenmsgLen       = 4
	nlaHdrLen         = 4
	nfnetlinkV0       = 0
	maxPendingPackets = 4096
)

// Delayer holds the packets of one queue.
type Delayer struct {
	queue  uint16
	file   *os.File
	delay  time.Duration
	jitter time.Duration

	wmu     sync.Mutex // writes to the socket
	mu      sync.Mutex
	rnd     *rand.Rand
	pending sync.WaitGroup
	held    int
	stopped bool
	done    chan struct{}
}

// Start binds netfilter queue number queue in the network namespace of
// process pid and starts releasing its packets after delay ± jitter. The
// caller then adds the rule that feeds the queue inside the namespace, e.g.
// `iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num N --queue-bypass`.
func Start(pid int, queue uint16, delay, jitter time.Duration, seed uint64) (*Delayer, error) {
	fd, err := socketIn(pid)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netdelay: bind: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netdelay: %w", err)
	}
	d := &Delayer{queue: queue, file: os.NewFile(uintptr(fd), fmt.Sprintf("nfqueue-%d", queue)),
		delay: delay, jitter: jitter, rnd: rand.New(rand.NewPCG(seed, uint64(queue))), done: make(chan struct{})}
	// Bind the queue for IPv4, then ask for metadata only.
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, unix.AF_INET}
	if err := d.request(nfqnlMsgConfig, unix.AF_UNSPEC, attr(nfqaCfgCmd, cmd)); err != nil {
		d.file.Close()
		return nil, fmt.Errorf("netdelay: bind queue %d: %w", queue, err)
	}
	params := make([]byte, 5)
	params[4] = nfqnlCopyMeta
	if err := d.request(nfqnlMsgConfig, unix.AF_UNSPEC, attr(nfqaCfgParams, params)); err != nil {
		d.file.Close()
		return nil, fmt.Errorf("netdelay: queue %d copy mode: %w", queue, err)
	}
	go d.loop()
	return d, nil
}

// socketIn opens a netfilter netlink socket inside the network namespace of
// process pid: the thread enters the namespace, opens the socket (which stays
// in that namespace) and returns to its own.
func socketIn(pid int) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return -1, fmt.Errorf("netdelay: %w", err)
	}
	defer self.Close()
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return -1, fmt.Errorf("netdelay: %w", err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return -1, fmt.Errorf("netdelay: enter the network namespace of %d: %w", pid, err)
	}
	fd, serr := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is in the wrong namespace; it must not be reused.
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if serr == nil {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("netdelay: back to our network namespace: %w", err)
	}
	if serr != nil {
		return -1, fmt.Errorf("netdelay: netlink socket: %w", serr)
	}
	return fd, nil
}

// attr encodes one netlink attribute, padded to 4 bytes.
func attr(typ uint16, payload []byte) []byte {
	n := nlaHdrLen + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[nlaHdrLen:], payload)
	return b
}

// message encodes a nfnetlink message to the queue subsystem.
func (d *Delayer) message(msg uint16, family uint8, flags uint16, attrs ...[]byte) []byte {
	size := nlmsgHdrLen + nfgenmsgLen
	for _, a := range attrs {
		size += len(a)
	}
	b := make([]byte, nlmsgHdrLen+nfgenmsgLen, size)
	binary.NativeEndian.PutUint32(b[0:], uint32(size))
	binary.NativeEndian.PutUint16(b[4:], nfnlSubsysQueue<<8|msg)
	binary.NativeEndian.PutUint16(b[6:], flags)
	b[16] = family
	b[17] = nfnetlinkV0
	binary.BigEndian.PutUint16(b[18:], d.queue)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

// request sends a message that asks for an acknowledgement and returns the
// kernel's error. It is used before the read loop starts.
func (d *Delayer) request(msg uint16, family uint8, attrs ...[]byte) error {
	if _, err := d.file.Write(d.message(msg, family, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs...)); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	d.file.SetReadDeadline(time.Now().Add(2 * time.Second))
	defer d.file.SetReadDeadline(time.Time{})
	n, err := d.file.Read(buf)
	if err != nil {
		return err
	}
	if n < nlmsgHdrLen+4 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("unexpected answer (%d bytes)", n)
	}
	if code := int32(binary.NativeEndian.Uint32(buf[nlmsgHdrLen:])); code != 0 {
		return unix.Errno(-code)
	}
	return nil
}

// loop reads queued packets and schedules their release.
func (d *Delayer) loop() {
	defer close(d.done)
	buf := make([]byte, 65536)
	for {
		n, err := d.file.Read(buf)
		if err != nil {
			return // closed
		}
		for b := buf[:n]; len(b) >= nlmsgHdrLen; {
			size := int(binary.NativeEndian.Uint32(b[0:]))
			if size < nlmsgHdrLen || size > len(b) {
				break
			}
			if binary.NativeEndian.Uint16(b[4:]) == nfnlSubsysQueue<<8|nfqnlMsgPacket {
				if id, ok := packetID(b[nlmsgHdrLen+nfgenmsgLen : size]); ok {
					d.hold(id)
				}
			}
			b = b[(size+3)&^3:]
		}
	}
}

// packetID finds NFQA_PACKET_HDR's packet id among the attributes.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= nlaHdrLen {
		n := int(binary.NativeEndian.Uint16(attrs[0:]))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff
		if n < nlaHdrLen || n > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && n >= nlaHdrLen+4 {
			return binary.BigEndian.Uint32(attrs[nlaHdrLen:]), true
		}
		attrs = attrs[(n+3)&^3:]
	}
	return 0, false
}

// hold releases packet id after its delay. Past maxPendingPackets held, it
// is released at once rather than dropped.
func (d *Delayer) hold(id uint32) {
	d.mu.Lock()
	wait := d.delay + time.Duration(d.rnd.NormFloat64()*float64(d.jitter))
	if wait < 0 || d.stopped || d.held >= maxPendingPackets {
		wait = 0
	}
	d.held++
	d.pending.Add(1)
	d.mu.Unlock()
	time.AfterFunc(wait, func() {
		defer d.pending.Done()
		d.verdict(id)
		d.mu.Lock()
		d.held--
		d.mu.Unlock()
	})
}

func (d *Delayer) verdict(id uint32) {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v[0:], nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	d.wmu.Lock()
	defer d.wmu.Unlock()
	_, _ = d.file.Write(d.message(nfqnlMsgVerdict, unix.AF_UNSPEC, unix.NLM_F_REQUEST, attr(nfqaVerdictHdr, v)))
}

// Stop releases every held packet (at its time), then closes the queue. The
// caller removes the iptables rule that feeds the queue first.
func (d *Delayer) Stop() error {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.pending.Wait()
	err := d.file.Close()
	<-d.done
	if err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("netdelay: %w", err)
	}
	return nil
}
