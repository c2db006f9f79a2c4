// Package netdelay shapes the packets a container sends, from the host,
// without tc netem: an iptables NFQUEUE rule in the container's network
// namespace (made by the caller, from the node's network helper; Rule) hands
// every outgoing packet to a netfilter queue, and this package, holding a
// netlink socket opened in the container's network namespace, gives each
// packet its verdict as a Policy says: after a delay (the mean plus normally
// distributed jitter), held back so that later packets pass it (reorder),
// paced to a bandwidth, with a bit flipped (corrupt), or sent twice
// (duplicate). Kernels built without sch_netem (this project's CI machines
// among them) still have NFQUEUE.
//
// With only delays, only packet metadata crosses into user space
// (NFQNL_COPY_META). Corruption, duplication and a bandwidth need the packet
// (NFQNL_COPY_PACKET; the kernel completes its checksum first): a corrupted
// packet goes back with one bit of its IP payload flipped and no valid
// checksum, so the receiver drops it as a noisy link's would be; a duplicate
// is sent again, whole, through a raw socket in the namespace, marked
// (DupMark) so that the rule lets it pass. No packet is ever dropped here.
// Stop removes nothing in the container: the caller deletes its iptables
// rule first (the rule uses --queue-bypass, so with no listener packets
// pass), then calls Stop, which waits until every held packet has been
// released.
package netdelay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DupMark is the firewall mark of the duplicates this package sends: the
// queue's rule must not take them again (Rule).
const DupMark = 0x5ca1

// Rule is the iptables rule (without -A/-D) that feeds queue with what the
// container sends on eth0, duplicates excepted.
func Rule(queue uint16) string {
	return fmt.Sprintf("OUTPUT -o eth0 -m mark ! --mark %#x -j NFQUEUE --queue-num %d --queue-bypass", DupMark, queue)
}

// Policy says what happens to each packet. Its parts compose: a packet is
// paced (Rate), then delayed (Delay ± Jitter, and Reorder's hold), and may
// be corrupted or duplicated.
type Policy struct {
	Delay, Jitter time.Duration
	// Reorder is the fraction of packets held ReorderBy while the others
	// pass at once (so later packets overtake them).
	Reorder   float64
	ReorderBy time.Duration
	// Duplicate and Corrupt are the fractions of packets sent twice, and
	// sent with one bit flipped.
	Duplicate, Corrupt float64
	// Rate, if not 0, is the bandwidth in bytes per second: packets leave
	// in order, each when the ones before it have had their time.
	Rate int64
}

// needsPacket: the policy reads packets' contents or lengths.
func (p Policy) needsPacket() bool { return p.Duplicate > 0 || p.Corrupt > 0 || p.Rate > 0 }

// Counts is what a Delayer did.
type Counts struct {
	Packets, Held, Reordered, Duplicated, Corrupted int64
	Bytes                                           int64 // with a packet policy
}

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
	nfqaPayload       = 10
	nfqnlCopyPacket   = 2
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
	policy Policy
	raw    int // a raw IP socket in the namespace, for duplicates (-1: none)

	wmu      sync.Mutex // writes to the socket
	mu       sync.Mutex
	rnd      *rand.Rand
	pending  sync.WaitGroup
	held     int
	stopped  bool
	nextFree time.Time // Rate's: when the link is free again
	done     chan struct{}

	packets, heldN, reordered, duplicated, corrupted, bytes atomic.Int64
}

// Start binds netfilter queue number queue in the network namespace of
// process pid and starts giving its packets their verdicts as p says. The
// caller then adds Rule(queue) inside the namespace.
func Start(pid int, queue uint16, p Policy, seed uint64) (*Delayer, error) {
	fd, err := socketIn(pid, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, err
	}
	raw := -1
	if p.Duplicate > 0 {
		if raw, err = socketIn(pid, unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW); err != nil {
			unix.Close(fd)
			return nil, err
		}
		if err := unix.SetsockoptInt(raw, unix.SOL_SOCKET, unix.SO_MARK, DupMark); err != nil {
			unix.Close(fd)
			unix.Close(raw)
			return nil, fmt.Errorf("netdelay: mark duplicates: %w", err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netdelay: bind: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netdelay: %w", err)
	}
	d := &Delayer{queue: queue, file: os.NewFile(uintptr(fd), fmt.Sprintf("nfqueue-%d", queue)), policy: p, raw: raw,
		rnd: rand.New(rand.NewPCG(seed, uint64(queue))), done: make(chan struct{})}
	// Bind the queue for IPv4, then ask for metadata only.
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, unix.AF_INET}
	if err := d.request(nfqnlMsgConfig, unix.AF_UNSPEC, attr(nfqaCfgCmd, cmd)); err != nil {
		d.close()
		return nil, fmt.Errorf("netdelay: bind queue %d: %w", queue, err)
	}
	// Copy range (big endian), then mode.
	params := make([]byte, 5)
	params[4] = nfqnlCopyMeta
	if p.needsPacket() {
		binary.BigEndian.PutUint32(params[0:], 0xffff)
		params[4] = nfqnlCopyPacket
	}
	if err := d.request(nfqnlMsgConfig, unix.AF_UNSPEC, attr(nfqaCfgParams, params)); err != nil {
		d.close()
		return nil, fmt.Errorf("netdelay: queue %d copy mode: %w", queue, err)
	}
	go d.loop()
	return d, nil
}

// close closes the sockets.
func (d *Delayer) close() {
	d.file.Close()
	if d.raw >= 0 {
		unix.Close(d.raw)
	}
}

// socketIn opens a socket inside the network namespace of process pid: the
// thread enters the namespace, opens the socket (which stays in that
// namespace) and returns to its own.
func socketIn(pid, domain, typ, proto int) (int, error) {
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
	fd, serr := unix.Socket(domain, typ, proto)
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is in the wrong namespace; it must not be reused.
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if serr == nil {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("netdelay: back to our network namespace: %w", err)
	}
	if serr != nil {
		return -1, fmt.Errorf("netdelay: socket: %w", serr)
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
				if id, payload, ok := parsePacket(b[nlmsgHdrLen+nfgenmsgLen : size]); ok {
					d.hold(id, payload)
				}
			}
			b = b[min((size+3)&^3, len(b)):]
		}
	}
}

// parsePacket finds NFQA_PACKET_HDR's packet id, and NFQA_PAYLOAD (a copy:
// the read buffer is reused), among the attributes.
func parsePacket(attrs []byte) (id uint32, payload []byte, ok bool) {
	for len(attrs) >= nlaHdrLen {
		n := int(binary.NativeEndian.Uint16(attrs[0:]))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff
		if n < nlaHdrLen || n > len(attrs) {
			return 0, nil, false
		}
		switch {
		case typ == nfqaPacketHdr && n >= nlaHdrLen+4:
			id, ok = binary.BigEndian.Uint32(attrs[nlaHdrLen:]), true
		case typ == nfqaPayload:
			payload = append([]byte(nil), attrs[nlaHdrLen:n]...)
		}
		if (n+3)&^3 > len(attrs) {
			break
		}
		attrs = attrs[(n+3)&^3:]
	}
	return id, payload, ok
}

// hold gives packet id its verdict at the time the policy says. Past
// maxPendingPackets held, it is released at once rather than dropped.
func (d *Delayer) hold(id uint32, payload []byte) {
	p := d.policy
	d.packets.Add(1)
	d.bytes.Add(int64(len(payload)))
	d.mu.Lock()
	now := time.Now()
	at := now
	if p.Rate > 0 && len(payload) > 0 {
		if d.nextFree.After(at) {
			at = d.nextFree
		}
		d.nextFree = at.Add(time.Duration(float64(len(payload)) / float64(p.Rate) * float64(time.Second)))
	}
	wait := at.Sub(now) + p.Delay + time.Duration(d.rnd.NormFloat64()*float64(p.Jitter))
	reorder := p.Reorder > 0 && d.rnd.Float64() < p.Reorder
	if reorder {
		wait += p.ReorderBy
	}
	dup := p.Duplicate > 0 && d.rnd.Float64() < p.Duplicate && len(payload) > 0
	var flip int = -1
	if p.Corrupt > 0 && d.rnd.Float64() < p.Corrupt && len(payload) > 20 {
		flip = 20 + d.rnd.IntN((len(payload)-20)*8) // a bit of the IP payload
	}
	if wait < 0 || d.stopped || d.held >= maxPendingPackets {
		wait = 0
	}
	d.held++
	d.pending.Add(1)
	d.mu.Unlock()
	if wait > 0 {
		d.heldN.Add(1)
	}
	if reorder {
		d.reordered.Add(1)
	}
	release := func() {
		defer d.pending.Done()
		var mangled []byte
		if flip >= 0 {
			mangled = payload
			mangled[flip/8] ^= 1 << (flip % 8)
			d.corrupted.Add(1)
		}
		d.verdict(id, mangled)
		if dup {
			d.duplicate(payload, flip)
		}
		d.mu.Lock()
		d.held--
		d.mu.Unlock()
	}
	if wait == 0 {
		release()
		return
	}
	time.AfterFunc(wait, release)
}

// duplicate sends the packet again, as it was before any flip, through the
// raw socket.
func (d *Delayer) duplicate(packet []byte, flip int) {
	if len(packet) < 20 || packet[0]>>4 != 4 {
		return
	}
	if flip >= 0 {
		packet = append([]byte(nil), packet...)
		packet[flip/8] ^= 1 << (flip % 8) // undo the flip
	}
	to := &unix.SockaddrInet4{}
	copy(to.Addr[:], packet[16:20])
	if err := unix.Sendto(d.raw, packet, 0, to); err == nil {
		d.duplicated.Add(1)
	}
}

// verdict accepts packet id, with payload in place of its own if not nil.
func (d *Delayer) verdict(id uint32, payload []byte) {
	v := make([]byte, 8)
	binary.BigEndian.PutUint32(v[0:], nfAccept)
	binary.BigEndian.PutUint32(v[4:], id)
	attrs := [][]byte{attr(nfqaVerdictHdr, v)}
	if payload != nil {
		attrs = append(attrs, attr(nfqaPayload, payload))
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	_, _ = d.file.Write(d.message(nfqnlMsgVerdict, unix.AF_UNSPEC, unix.NLM_F_REQUEST, attrs...))
}

// Counts is what the Delayer has done so far.
func (d *Delayer) Counts() Counts {
	return Counts{Packets: d.packets.Load(), Held: d.heldN.Load(), Reordered: d.reordered.Load(),
		Duplicated: d.duplicated.Load(), Corrupted: d.corrupted.Load(), Bytes: d.bytes.Load()}
}

// Stop releases every held packet (at its time), then closes the queue. The
// caller removes the iptables rule that feeds the queue first.
func (d *Delayer) Stop() error {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.pending.Wait()
	err := d.file.Close()
	if d.raw >= 0 {
		unix.Close(d.raw)
	}
	<-d.done
	if err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("netdelay: %w", err)
	}
	return nil
}
