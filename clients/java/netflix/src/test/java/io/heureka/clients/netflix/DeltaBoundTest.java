package io.heureka.clients.netflix;

import static io.heureka.clients.netflix.Heureka.eventually;
import static io.heureka.clients.netflix.Heureka.expect;
import static io.heureka.clients.netflix.Heureka.getJson;
import static io.heureka.clients.netflix.Heureka.register;
import static io.heureka.clients.netflix.Heureka.slash;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.heureka.clients.netflix.NetflixClient.Format;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The plain Netflix DiscoveryClient against a node whose delta is bounded to one byte
 * (--delta-max-bytes 1; HEUREKA_URL_BOUNDED): every change leaves the delta as soon as the node's
 * pruner runs, so the client's delta fetches miss the changes. The client must see each gap in the
 * apps hashcode and fetch the full registry: it never keeps an instance that was cancelled, nor misses
 * one that registered.
 */
class DeltaBoundTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    @Test
    void gapsInTheDeltaAreHealedByFullFetches() {
        String base = Heureka.env("HEUREKA_URL_BOUNDED");
        String app = "BOUNDED";
        String a = "bounded-client";
        NetflixClient c = new NetflixClient("bounded", slash(base), app, a, Format.JSON);
        Recorder rec = c.recorder;
        try {
            c.up();
            eventually(WAIT, () -> "the client sees itself" + rec.dump(), () -> c.seen(a) != null);
            eventually(WAIT, () -> "two delta fetches" + rec.dump(), () -> rec.deltaFetches().size() >= 2);
            int fulls = rec.fullFetches().size();
            for (int i = 0; i < 3; i++) {
                String b = "bounded-other-" + i;
                register(base, app, b, "UP");
                eventually(WAIT, () -> "the client sees " + b + rec.dump(), () -> c.seen(b) != null);
                expect(200, "DELETE", slash(base) + "apps/" + app + "/" + b, null, null);
                eventually(WAIT, () -> b + " gone from the client" + rec.dump(), () -> c.seen(b) == null);
            }
            // Six changes, each pruned from the delta within microseconds of its write: the client
            // learnt of (nearly) every one from a full fetch.
            assertTrue(rec.fullFetches().size() >= fulls + 3,
                    "full fetches healed the gaps: " + fulls + " before, " + rec.fullFetches().size() + " after" + rec.dump());
            String serverHash = getJson(base, "apps").at("/applications/apps__hashcode").asText();
            eventually(WAIT, () -> "client and server hashcodes agree" + rec.dump(),
                    () -> serverHash.equals(c.client.getApplications().getReconcileHashCode()));
        } finally {
            c.close();
        }
    }
}
