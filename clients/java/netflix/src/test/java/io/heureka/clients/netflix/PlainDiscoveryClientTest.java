package io.heureka.clients.netflix;

import static io.heureka.clients.netflix.Heureka.eventually;
import static io.heureka.clients.netflix.Heureka.expect;
import static io.heureka.clients.netflix.Heureka.getJson;
import static io.heureka.clients.netflix.Heureka.register;
import static io.heureka.clients.netflix.Heureka.slash;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.netflix.appinfo.InstanceInfo;
import com.netflix.appinfo.InstanceInfo.InstanceStatus;
import io.heureka.clients.netflix.NetflixClient.Format;
import io.heureka.clients.netflix.Recorder.Exchange;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The plain Netflix DiscoveryClient (eureka-client 2.0.6, Jersey 3 transport)
 * against a real Heureka node (HEUREKA_URL_JSON, _COMPACT, _XML), in its default JSON, in compact
 * JSON (clientDataAccept=compact) and in XML. Each run goes through a
 * client's whole life: register, renew, full then delta fetches, hashcode
 * reconciliation, another instance's status change and override made through
 * the REST API, an override of its own instance, and deregistration on
 * shutdown. Every wait polls; nothing sleeps a fixed time.
 */
class PlainDiscoveryClientTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    @ParameterizedTest(name = "{0}")
    @EnumSource(Format.class)
    void lifecycle(Format format) {
        // A node per format: the runs go side by side, and the apps hashcode covers the whole registry.
        String base = Heureka.env("HEUREKA_URL_" + format.name());
        String app = "PLAIN-" + format.name();
        String a = app.toLowerCase() + "-client";
        String b = app.toLowerCase() + "-other";
        String mediaType = format == Format.XML ? "application/xml" : "application/json";
        boolean full = format != Format.COMPACT; // compact instances carry no overriddenStatus

        // Another instance of the same application, registered through the REST API.
        register(base, app, b, "UP");

        NetflixClient c = new NetflixClient("plain-" + format.name().toLowerCase(), slash(base), app, a, format);
        Recorder rec = c.recorder;
        try {
            // ---- register: STARTING -> UP makes the client POST at once.
            c.up();
            eventually(WAIT, () -> "the server lists " + a + " UP" + rec.dump(), () -> {
                JsonNode in = getJson(base, "apps/" + app + "/" + a);
                return in != null && in.at("/instance/status").asText().equals("UP")
                        && rec.count("POST", "/apps/" + app) > 0; // the client has seen the answer too
            });
            List<Exchange> registers = rec.matching(e -> e.method().equals("POST") && e.path().endsWith("/apps/" + app));
            assertFalse(registers.isEmpty(), "no registration seen" + rec.dump());
            for (Exchange e : registers) {
                assertEquals(204, e.status(), "register: " + e);
                assertEquals(mediaType, e.requestType(), "registration body format: " + e);
            }
            JsonNode stored = getJson(base, "apps/" + app + "/" + a).get("instance");
            assertEquals(format.name(), stored.at("/metadata/format").asText(), "metadata sent by the client");
            assertEquals(1, stored.at("/leaseInfo/renewalIntervalInSecs").asInt(), "lease renewal interval");
            assertEquals(10, stored.at("/leaseInfo/durationInSecs").asInt(), "lease duration");
            assertEquals(app.toLowerCase() + ".vip", stored.at("/vipAddress").asText());

            // ---- full fetch at start, then deltas; both in the client's format.
            eventually(WAIT, () -> "the client sees itself and " + b + rec.dump(),
                    () -> c.seen(a) != null && c.seen(b) != null);
            assertEquals("rest", c.seen(b).getMetadata().getOrDefault("by", full ? "?" : "rest"),
                    "metadata of the other instance");
            eventually(WAIT, () -> "three delta fetches" + rec.dump(), () -> rec.deltaFetches().size() >= 3);
            Predicate<Exchange> ok = e -> e.status() == 200 && mediaType.equals(e.responseType());
            assertFalse(rec.fullFetches().isEmpty(), "no full fetch" + rec.dump());
            assertTrue(rec.fullFetches().stream().allMatch(ok), "full fetches" + rec.dump());
            assertTrue(rec.deltaFetches().stream().allMatch(ok), "delta fetches" + rec.dump());
            if (format == Format.COMPACT) {
                assertTrue(rec.deltaFetches().stream().allMatch(e -> e.eurekaAccept() != null && e.eurekaAccept().contains("compact")),
                        "compact fetches carry X-Eureka-Accept: compact" + rec.dump());
            }

            // ---- renewals: PUTs answered 200, and the lease's last renewal moves on the server.
            long renewed = getJson(base, "apps/" + app + "/" + a).at("/instance/leaseInfo/lastRenewalTimestamp").asLong();
            eventually(WAIT, () -> "two more renewals of " + a + rec.dump(), () ->
                    getJson(base, "apps/" + app + "/" + a).at("/instance/leaseInfo/lastRenewalTimestamp").asLong() > renewed
                            && rec.count("PUT", "/apps/" + app + "/" + a) >= 2);
            assertTrue(rec.matching(e -> e.method().equals("PUT") && e.path().endsWith("/apps/" + app + "/" + a))
                    .stream().allMatch(e -> e.status() == 200), "renewals" + rec.dump());

            // ---- hashcode: the deltas' apps__hashcode matches what the client computes, so
            // steady deltas never trigger a full fetch ...
            int fulls = rec.fullFetches().size();
            int deltas = rec.deltaFetches().size();
            eventually(WAIT, () -> "three more deltas" + rec.dump(), () -> rec.deltaFetches().size() >= deltas + 3);
            assertEquals(fulls, rec.fullFetches().size(),
                    "a delta's hashcode did not match the client's registry (it fetched in full)" + rec.dump());
            String serverHash = getJson(base, "apps").at("/applications/apps__hashcode").asText();
            assertEquals(serverHash, c.client.getApplications().getReconcileHashCode(), "client vs server hashcode");
            // ... and a client whose copy has drifted (an instance the server never had, which no
            // delta will mention) notices on the next delta and reconciles with a full fetch.
            InstanceInfo ghost = new InstanceInfo.Builder(new InstanceInfo(c.seen(b))).setInstanceId("ghost")
                    .setStatus(InstanceStatus.UP).build();
            c.client.getApplication(app).addInstance(ghost);
            assertNotNull(c.seen("ghost"));
            eventually(WAIT, () -> "a full fetch that drops the ghost" + rec.dump(),
                    () -> rec.fullFetches().size() > fulls && c.seen("ghost") == null);
            assertTrue(rec.fullFetches().stream().allMatch(ok), "reconciling fetch" + rec.dump());
            eventually(WAIT, () -> "hashcodes agree after reconciliation",
                    () -> serverHash.equals(c.client.getApplications().getReconcileHashCode()));

            // ---- the other instance changes its own status (it re-registers DOWN, as a client does).
            register(base, app, b, "DOWN");
            eventually(WAIT, () -> b + " DOWN in the client" + rec.dump(),
                    () -> c.seen(b).getStatus() == InstanceStatus.DOWN);

            // ---- an operator overrides it: OUT_OF_SERVICE, kept when it re-registers UP, removed with value=UP.
            expect(200, "PUT", slash(base) + "apps/" + app + "/" + b + "/status?value=OUT_OF_SERVICE", null, null);
            eventually(WAIT, () -> b + " OUT_OF_SERVICE in the client" + rec.dump(), () -> {
                InstanceInfo i = c.seen(b);
                return i.getStatus() == InstanceStatus.OUT_OF_SERVICE
                        && (!full || i.getOverriddenStatus() == InstanceStatus.OUT_OF_SERVICE);
            });
            register(base, app, b, "UP");
            assertEquals("OUT_OF_SERVICE", getJson(base, "apps/" + app + "/" + b).at("/instance/status").asText(),
                    "the override survives re-registration");
            expect(200, "DELETE", slash(base) + "apps/" + app + "/" + b + "/status?value=UP", null, null);
            eventually(WAIT, () -> b + " UP again in the client" + rec.dump(), () -> {
                InstanceInfo i = c.seen(b);
                return i.getStatus() == InstanceStatus.UP
                        && (!full || i.getOverriddenStatus() == InstanceStatus.UNKNOWN);
            });

            // ---- the other instance cancels: the client drops it from a delta's DELETED entry (which
            // the server keeps packed) with a matching hashcode, so without a full fetch.
            int fullsBeforeCancel = rec.fullFetches().size();
            expect(200, "DELETE", slash(base) + "apps/" + app + "/" + b, null, null);
            eventually(WAIT, () -> b + " gone from the client" + rec.dump(), () -> c.seen(b) == null);
            assertEquals(fullsBeforeCancel, rec.fullFetches().size(),
                    "the cancel reached the client in a delta, not a full fetch" + rec.dump());

            // ---- an override of the client's own instance: it keeps renewing and sees itself
            // OUT_OF_SERVICE; removing the override without a value leaves UNKNOWN, the next renewal
            // gets 404 and the client registers again, UP.
            expect(200, "PUT", slash(base) + "apps/" + app + "/" + a + "/status?value=OUT_OF_SERVICE", null, null);
            eventually(WAIT, () -> a + " sees itself OUT_OF_SERVICE" + rec.dump(),
                    () -> c.seen(a).getStatus() == InstanceStatus.OUT_OF_SERVICE);
            int puts = (int) rec.count("PUT", "/apps/" + app + "/" + a);
            eventually(WAIT, () -> "renewals under the override" + rec.dump(),
                    () -> rec.count("PUT", "/apps/" + app + "/" + a) >= puts + 2);
            assertEquals("OUT_OF_SERVICE", getJson(base, "apps/" + app + "/" + a).at("/instance/status").asText(),
                    "renewals keep the override");
            int posts = registers.size();
            expect(200, "DELETE", slash(base) + "apps/" + app + "/" + a + "/status", null, null);
            eventually(WAIT, () -> "a 404 renewal, then a new registration, UP" + rec.dump(), () -> {
                JsonNode in = getJson(base, "apps/" + app + "/" + a);
                return in != null && in.at("/instance/status").asText().equals("UP")
                        && rec.matching(e -> e.method().equals("PUT") && e.status() == 404).size() >= 1
                        && rec.count("POST", "/apps/" + app) > posts;
            });
            eventually(WAIT, () -> a + " sees itself UP" + rec.dump(),
                    () -> c.seen(a).getStatus() == InstanceStatus.UP);
        } finally {
            // ---- shutdown deregisters.
            c.close();
        }
        List<Exchange> cancels = rec.matching(e -> e.method().equals("DELETE") && e.path().endsWith("/apps/" + app + "/" + a));
        assertEquals(1, cancels.size(), "one cancel on shutdown" + rec.dump());
        assertEquals(200, cancels.get(0).status(), "cancel" + rec.dump());
        assertNull(getJson(base, "apps/" + app + "/" + a), "gone from the server after shutdown");
        assertNull(getJson(base, "apps/" + app), "the application went with its last instance");
    }
}
