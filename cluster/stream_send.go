package cluster

import (
	"errors"

	"github.com/heureka/heureka/wire"
)

// sendOn encodes m and sends it to one member on the peer stream of
// class c (stream.go), or by SendReliable to a member that does not speak
// peer streams (a node of the previous release). Only peer links call it,
// one sender per class.
func (r *Replicator) sendOn(to string, c streamClass, m wire.Message) error {
	b, err := r.encodeTo(to, m)
	if err != nil {
		return err
	}
	peers := r.getPeers()
	s, ok := peers.(streamSender)
	if x := r.ae.exch.Load(); !ok && x != nil {
		// The membership gave itself to its delegate (useExchanger): its
		// streams, whatever wraps it as Peers.
		s, ok = (*x).(streamSender)
	}
	if ok {
		err = s.SendStream(to, c, b)
		if !errors.Is(err, errNoStream) {
			return r.countSent(&r.stats.messages, &r.stats.bytes, b, err)
		}
	}
	return r.countSent(&r.stats.messages, &r.stats.bytes, b, peers.SendReliable(to, b))
}
