package io.heureka.clients.netflix;

import static io.heureka.clients.netflix.Heureka.eventually;
import static io.heureka.clients.netflix.Heureka.expect;
import static io.heureka.clients.netflix.Heureka.getJson;
import static io.heureka.clients.netflix.Heureka.register;
import static io.heureka.clients.netflix.Heureka.slash;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.netflix.appinfo.InstanceInfo;
import com.netflix.config.ConfigurationManager;
import io.heureka.clients.netflix.NetflixClient.Format;
import java.time.Duration;
import org.apache.commons.configuration.AbstractConfiguration;
import org.junit.jupiter.api.Test;

/**
 * The plain Netflix DiscoveryClient in region dc1 with fetchRemoteRegionsRegistry=dc2, against a
 * Heureka node of dc1 (HEUREKA_REGION_LOCAL_URL) that pulls a Heureka node of dc2
 * (HEUREKA_REGION_REMOTE_URL) as its remote region. The client sends ?regions=dc2 on its full and
 * delta fetches; it must see dc2's instances (merged into its local list: they are not AWS
 * instances), labelled with their region as zone, lose them when dc2 cancels them, and agree with
 * the server's apps__hashcode over the union, so that its deltas do not fall back to full fetches.
 */
class RemoteRegionsTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void clientFetchesTheRemoteRegion() {
        String local = Heureka.env("HEUREKA_REGION_LOCAL_URL");
        String remote = Heureka.env("HEUREKA_REGION_REMOTE_URL");
        String ns = "regions";
        AbstractConfiguration cfg = ConfigurationManager.getConfigInstance();
        cfg.setProperty(ns + ".region", "dc1");
        cfg.setProperty(ns + ".dc1.availabilityZones", "dc1");
        cfg.setProperty(ns + ".serviceUrl.dc1", slash(local));
        cfg.setProperty(ns + ".fetchRemoteRegionsRegistry", "dc2");
        cfg.setProperty(ns + ".dc2.availabilityZones", "dc2");
        String app = "REGIONAL";
        NetflixClient c = new NetflixClient(ns, slash(local), app, "regional-client", Format.JSON);
        Recorder rec = c.recorder;
        try {
            c.up();
            eventually(WAIT, () -> "the client sees itself" + rec.dump(), () -> c.seen("regional-client") != null);

            register(remote, app, "remote-1", "UP");
            eventually(WAIT, () -> "the client sees dc2's instance" + rec.dump(), () -> c.seen("remote-1") != null);
            InstanceInfo seen = c.seen("remote-1");
            assertEquals("dc2", seen.getMetadata().get("zone"), "a remote instance's zone is its region");
            assertEquals("dc2", seen.getMetadata().get("heureka.region"));
            assertNull(c.seen("regional-client").getMetadata().get("heureka.region"), "local instances are unmarked");

            // The client's hashcode over what it holds agrees with the server's over the union, so
            // its delta fetches stand: no full fetch during several deltas.
            String serverHash = getJson(local, "apps?regions=dc2").at("/applications/apps__hashcode").asText();
            assertEquals("UP_2_", serverHash);
            eventually(WAIT, () -> "client and server hashcodes agree" + rec.dump(),
                    () -> serverHash.equals(c.client.getApplications().getReconcileHashCode()));
            int fulls = rec.fullFetches().size();
            int deltas = rec.deltaFetches().size();
            eventually(WAIT, () -> "three more delta fetches" + rec.dump(), () -> rec.deltaFetches().size() >= deltas + 3);
            assertEquals(fulls, rec.fullFetches().size(), "deltas with regions reconcile" + rec.dump());

            expect(200, "DELETE", slash(remote) + "apps/" + app + "/remote-1", null, null);
            eventually(WAIT, () -> "dc2's cancel reaches the client" + rec.dump(), () -> c.seen("remote-1") == null);
            assertNotNull(c.seen("regional-client"));
        } finally {
            c.close();
        }
    }
}
