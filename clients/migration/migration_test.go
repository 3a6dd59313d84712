package migration_test

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// Eureka → Heureka: the reference server lists a Heureka node in its
// defaultZone. At startup it fetches the registry from that peer; then its
// clients' registrations, renewals, status changes and cancels reach both
// Heureka nodes by peer batch, and nothing is evicted on Heureka while the
// clients keep renewing on the Java side.
func TestEurekaServerReplicatesIntoHeureka(t *testing.T) {
	t.Parallel()
	hc := startHeureka(t, []string{"127.0.0.1:0", "127.0.0.1:0"}, nil, nil)
	h := hc.urls()

	// Something already on Heureka, with a long lease: the Java server's
	// startup sync (a registry fetch from its peer) must bring it over.
	synced := &client{app: "SYNCED", id: "s-1"}
	body := []byte(`{"instance":{"instanceId":"s-1","hostName":"s-1.local","app":"SYNCED","ipAddr":"10.0.0.9","status":"UP",` +
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},` +
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"vipAddress":"synced"}}`)
	code, out := do(http.MethodPost, h[1]+"/apps/SYNCED", body)
	require.Equal(t, http.StatusNoContent, code, string(out))
	waitVisible(t, "registered on Heureka", h, []*client{synced})

	j := startJava(t, freePort(t), h[0]+"/")
	waitVisible(t, "the Java server's startup sync from its Heureka peer", []string{j.URL}, []*client{synced})

	var clients []*client
	for i := range 6 {
		clients = append(clients, startClient(t, j.URL, "JAVA-ORDERS", fmt.Sprint("jo-", i)))
	}
	all := append([]string{j.URL}, h...)
	waitVisible(t, "registered on the Java server", all, clients)
	holdVisible(t, "clients renewing on the Java server", holdLease, all, clients)

	// A status override and its removal, made on the Java server.
	target := clients[0]
	code, out = do(http.MethodPut, j.URL+"/apps/JAVA-ORDERS/"+target.id+"/status?value=OUT_OF_SERVICE", nil)
	require.Equal(t, http.StatusOK, code, string(out))
	waitStatus(t, "status override", all, target.app, target.id, "OUT_OF_SERVICE")
	code, out = do(http.MethodDelete, j.URL+"/apps/JAVA-ORDERS/"+target.id+"/status?value=UP", nil)
	require.Equal(t, http.StatusOK, code, string(out))
	waitStatus(t, "override removed", all, target.app, target.id, "UP")

	// Cancels.
	for _, c := range clients[:2] {
		c.cancel(t)
		waitGone(t, "cancel on the Java server", all, c.app, c.id)
	}
	holdVisible(t, "after the cancels", holdLease, all, clients[2:])
	for _, c := range clients[:2] {
		for _, s := range all {
			assert.Empty(t, status(s, c.app, c.id), "%s/%s came back on %s", c.app, c.id, s)
		}
	}
	checkRenewals(t, clients)
}

// breakable is a transport that can be cut: the sabotage that shows the
// Heureka → Eureka check can fail.
type breakable struct{ cut atomic.Bool }

func (b *breakable) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.cut.Load() {
		return nil, errors.New("link cut on purpose")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// Heureka → Eureka (--eureka-peers): instances registered on Heureka appear
// on the Java server, Heureka's renewals keep them alive there past their
// lease, and cancels remove them. A node whose link to the Java server is
// cut on purpose loses its instances there (the Java server evicts them):
// the check would see a broken replication.
func TestHeurekaReplicatesIntoEureka(t *testing.T) {
	t.Parallel()
	j := startJava(t, freePort(t))
	peers := []string{j.URL + "/"}
	hc := startHeureka(t, []string{"127.0.0.1:0", "127.0.0.1:0"}, peers, nil)
	h := hc.urls()
	link := &breakable{}
	broken := startHeureka(t, []string{"127.0.0.1:0"}, peers, func(c *node.Config) {
		c.Name = "broken"
		c.EurekaPeers.Client = &http.Client{Transport: link}
	})
	b := broken.urls()[0]

	var clients []*client
	for i := range 6 {
		clients = append(clients, startClient(t, h[i%2], "HEUREKA-ORDERS", fmt.Sprint("ho-", i)))
	}
	sabotaged := []*client{startClient(t, b, "SABOTAGED", "x-0"), startClient(t, b, "SABOTAGED", "x-1")}
	all := append([]string{j.URL}, h...)
	waitVisible(t, "registered on Heureka", all, clients)
	waitVisible(t, "registered on the node to be cut", []string{j.URL, b}, sabotaged)

	link.cut.Store(true)
	holdVisible(t, "clients renewing on Heureka", holdLease, all, clients)
	for _, c := range sabotaged {
		waitGone(t, "sabotage: the cut node's renewals no longer reach the Java server", []string{j.URL}, c.app, c.id)
	}
	assert.Empty(t, missing([]string{b}, sabotaged), "the cut node itself keeps its renewing clients")
	assert.Positive(t, broken.nodes[0].EurekaPeers().Stats()[0].Failed, "the cut link's batches failed")

	for _, c := range clients[:2] {
		c.cancel(t)
		waitGone(t, "cancel on Heureka", all, c.app, c.id)
	}
	holdVisible(t, "after the cancels", holdLease, all, clients[2:])
	var heartbeats uint64
	for _, nd := range hc.nodes {
		st := nd.EurekaPeers().Stats()[0]
		t.Logf("%s → Java: %d batches, %d failed, sent %v, %d re-registrations", nd.URL(), st.Batches, st.Failed, st.Sent, st.Reregistered)
		heartbeats += st.Sent["Heartbeat"]
		assert.Zero(t, st.Dropped)
	}
	assert.Positive(t, heartbeats)
	checkRenewals(t, clients)
}

// The README's migration procedure, step by step, with every instance
// whose client still renews visible on every server still in service, at
// every step:
//
//  1. clients on Eureka;
//  2. add Heureka as a peer both ways: the Eureka server lists the Heureka
//     URL in its defaultZone (started with it here, to save the rolling
//     restart a real cluster does; a listed peer that is not up yet is
//     harmless), Heureka starts with --eureka-peers. The instances the
//     Eureka server took before Heureka was up come across when Heureka
//     answers their replicated heartbeats 404 and the Eureka server sends
//     the registrations (its log says "missing entry");
//  3. move the clients one by one: each registers on Heureka and stops
//     renewing on Eureka;
//  4. remove Eureka.
func TestMigrationProcedure(t *testing.T) {
	t.Parallel()
	hPort := freePort(t)
	h1 := fmt.Sprintf("http://127.0.0.1:%d/eureka/", hPort)
	j := startJava(t, freePort(t), h1)

	// 1. Clients on Eureka.
	var clients []*client
	for i := range 6 {
		clients = append(clients, startClient(t, j.URL, "SHOP", fmt.Sprint("shop-", i)))
	}
	waitVisible(t, "step 1: clients on Eureka", []string{j.URL}, clients)

	// 2. Heureka joins as a peer, both ways.
	hc := startHeureka(t, []string{fmt.Sprintf("127.0.0.1:%d", hPort), "127.0.0.1:0"}, []string{j.URL + "/"}, nil)
	h := hc.urls()
	all := append([]string{j.URL}, h...)
	waitVisible(t, "step 2: Heureka added as a peer", all, clients)
	holdVisible(t, "step 2: both in service, clients on Eureka", holdLease, all, clients)

	// 3. Move the clients one by one.
	for i, c := range clients {
		c.moveTo(t, h[i%2])
		holdVisible(t, fmt.Sprintf("step 3: %d of %d clients moved", i+1, len(clients)), 2*renewInterval, all, clients)
	}
	holdVisible(t, "step 3: every client on Heureka", holdLease, all, clients)

	// 4. Remove Eureka.
	j.Stop()
	holdVisible(t, "step 4: Eureka removed", holdLease, h, clients)
	checkRenewals(t, clients)
}
