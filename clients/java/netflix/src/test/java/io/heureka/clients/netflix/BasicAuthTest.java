package io.heureka.clients.netflix;

import static io.heureka.clients.netflix.Heureka.eventually;
import static io.heureka.clients.netflix.Heureka.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.heureka.clients.netflix.NetflixClient.Format;
import io.heureka.clients.netflix.Recorder.Exchange;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Basic auth with the credentials in the service URL
 * (http://user:pass@host:port/eureka/), as Eureka and Spring users write it,
 * against a node started with users (HEUREKA_AUTH_URL, HEUREKA_USER,
 * HEUREKA_PASS). eureka-client 2.x's Jersey 3 transport takes the user
 * information out of the URL and sends it preemptively as
 * "Authorization: Basic". Characters such as '@', '/' and '#' are
 * percent-encoded in the URL and arrive decoded; a ':' cannot be used even
 * encoded, since the transport splits the decoded user information at ':'
 * and ignores credentials with more than one.
 */
class BasicAuthTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    private static String withCredentials(String base, String user, String pass) {
        URI u = URI.create(Heureka.slash(base));
        return u.getScheme() + "://" + URLEncoder.encode(user, StandardCharsets.UTF_8) + ":"
                + URLEncoder.encode(pass, StandardCharsets.UTF_8) + "@" + u.getHost() + ":" + u.getPort() + u.getPath();
    }

    private static String basic(String user, String pass) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + pass).getBytes(StandardCharsets.UTF_8));
    }

    /** The instance as the server holds it, read with the right credentials: its status or null (404). */
    private static String statusOnServer(String base, String auth, String app, String id) {
        HttpResponse<String> r = send("GET", Heureka.slash(base) + "apps/" + app + "/" + id, null, null, auth);
        if (r.statusCode() == 404) {
            return null;
        }
        assertEquals(200, r.statusCode(), r.body());
        try {
            return Heureka.JSON.readTree(r.body()).at("/instance/status").asText();
        } catch (java.io.IOException e) {
            throw new AssertionError(r.body(), e);
        }
    }

    @Test
    void credentialsInTheServiceUrl() {
        String base = Heureka.env("HEUREKA_AUTH_URL");
        String user = Heureka.env("HEUREKA_USER");
        String pass = Heureka.env("HEUREKA_PASS");
        String auth = basic(user, pass);
        String app = "AUTH-RIGHT";
        String id = "auth-right-1";

        NetflixClient c = new NetflixClient("auth-right", withCredentials(base, user, pass), app, id, Format.JSON);
        Recorder rec = c.recorder;
        try {
            c.up();
            eventually(WAIT, () -> "registered and renewed with credentials" + rec.dump(),
                    () -> "UP".equals(statusOnServer(base, auth, app, id))
                            && rec.count("PUT", "/apps/" + app + "/" + id) >= 1
                            && c.seen(id) != null && !rec.deltaFetches().isEmpty());
            List<Exchange> all = rec.all();
            assertTrue(all.stream().allMatch(e -> "Basic".equals(e.authScheme())),
                    "every request carries Authorization: Basic" + rec.dump());
            assertTrue(all.stream().allMatch(e -> e.status() / 100 == 2), "every request succeeded" + rec.dump());
        } finally {
            c.close();
        }
        assertEquals(200, rec.matching(e -> e.method().equals("DELETE")).get(0).status(), "cancel" + rec.dump());
        assertNull(statusOnServer(base, auth, app, id), "deregistered on shutdown");
    }

    @Test
    void wrongPasswordFailsClearly() {
        String base = Heureka.env("HEUREKA_AUTH_URL");
        String user = Heureka.env("HEUREKA_USER");
        String pass = Heureka.env("HEUREKA_PASS");
        String app = "AUTH-WRONG";
        String id = "auth-wrong-1";

        NetflixClient c = new NetflixClient("auth-wrong", withCredentials(base, user, pass + "-wrong"), app, id,
                Format.JSON);
        Recorder rec = c.recorder;
        try {
            c.up();
            // It tries to register (and keeps fetching); every answer is 401 with a Basic challenge.
            eventually(WAIT, () -> "a refused registration and fetch" + rec.dump(),
                    () -> rec.count("POST", "/apps/" + app) >= 1 && !rec.fullFetches().isEmpty());
            for (Exchange e : rec.all()) {
                assertEquals(401, e.status(), "with a wrong password: " + e);
                assertNotNull(e.wwwAuthenticate(), "401 without WWW-Authenticate: " + e);
                assertTrue(e.wwwAuthenticate().startsWith("Basic"), e.wwwAuthenticate());
            }
            assertNull(statusOnServer(base, basic(user, pass), app, id), "not registered");
            assertEquals(0, c.client.getApplications().size(), "nothing fetched");
            assertFalse(c.client.getStats().lastSuccessfulRegistryFetchTimestampMs() > 0, "no successful fetch");
            assertFalse(c.client.getStats().lastSuccessfulHeartbeatTimestampMs() > 0, "no successful heartbeat");
        } finally {
            c.close();
        }
        // What the client's log shows is the status; the body says why.
        HttpResponse<String> r = send("GET", Heureka.slash(base) + "apps/", null, null, basic(user, pass + "-wrong"));
        assertEquals(401, r.statusCode());
        assertFalse(r.body().isBlank(), "a 401 with a message");
        System.out.println("wrong password: 401, " + r.headers().firstValue("WWW-Authenticate").orElse("")
                + ", body: " + r.body().strip());
    }
}
