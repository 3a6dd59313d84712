package io.heureka.clients.netflix;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assumptions;

/**
 * What the tests need besides the Eureka client: the node URLs that the Go
 * driver passes in HEUREKA_* variables, a plain HTTP client for what another
 * party does through the REST API (register an instance, override its status)
 * and for what the server holds, and polling.
 */
final class Heureka {
    private Heureka() {}

    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /**
     * The variable's value; the test is skipped when it is unset, which only
     * happens when Maven runs without the Go driver (make javadeps does that
     * to fetch the dependencies).
     */
    static String env(String name) {
        String v = System.getenv(name);
        Assumptions.assumeTrue(v != null && !v.isEmpty(),
                name + " is unset: these tests need the nodes that `go test ./clients/java/` starts");
        return v;
    }

    /** The node's Eureka base URL with a trailing slash, as Eureka clients want it. */
    static String slash(String url) {
        return url.endsWith("/") ? url : url + "/";
    }

    static HttpResponse<String> send(String method, String url, String contentType, String body) {
        return send(method, url, contentType, body, null);
    }

    /** Sends a request; authorization, if not null, is the Authorization header's value. */
    static HttpResponse<String> send(String method, String url, String contentType, String body,
                                     String authorization) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(10))
                .header("Accept", "application/json");
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        if (body != null) {
            b.header("Content-Type", contentType);
            b.method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        try {
            return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new AssertionError(method + " " + url + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(method + " " + url + " interrupted", e);
        }
    }

    static void expect(int status, String method, String url, String contentType, String body) {
        HttpResponse<String> r = send(method, url, contentType, body);
        assertEquals(status, r.statusCode(), method + " " + url + " answered " + r.body());
    }

    /** Registers an instance the way any other Eureka client would, in JSON. */
    static void register(String base, String app, String id, String status) {
        String body = """
                {"instance":{"instanceId":"%2$s","hostName":"%2$s.test","app":"%1$s","ipAddr":"127.0.0.21",
                 "status":"%3$s","port":{"$":8080,"@enabled":"true"},"securePort":{"$":8443,"@enabled":"false"},
                 "vipAddress":"%1$s.vip","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
                 "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90},"metadata":{"by":"rest"}}}"""
                .formatted(app, id, status);
        expect(204, "POST", slash(base) + "apps/" + app, "application/json", body);
    }

    /** GET base/path in JSON; null on 404. */
    static JsonNode getJson(String base, String path) {
        HttpResponse<String> r = send("GET", slash(base) + path, null, null);
        if (r.statusCode() == 404) {
            return null;
        }
        assertEquals(200, r.statusCode(), "GET " + path + " answered " + r.body());
        try {
            return JSON.readTree(r.body());
        } catch (IOException e) {
            throw new AssertionError("GET " + path + ": not JSON: " + r.body(), e);
        }
    }

    /** Polls cond every 50 ms until it holds or timeout passes; fails with what() then. */
    static void eventually(Duration timeout, Supplier<String> what, BooleanSupplier cond) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                if (cond.getAsBoolean()) {
                    return;
                }
            } catch (RuntimeException e) {
                // a condition may read a registry that is not there yet
            }
            if (System.nanoTime() > deadline) {
                fail("not within " + timeout.toSeconds() + " s: " + what.get());
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted while waiting: " + what.get());
            }
        }
    }
}
