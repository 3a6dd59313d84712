package io.heureka.clients.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.heureka.clients.spring.caller.CallerApp;
import io.heureka.clients.spring.greeter.GreeterApp;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.client.RestClient;

/**
 * Spring Boot apps with spring-cloud-starter-netflix-eureka-client on a
 * two-node Heureka cluster, both nodes in eureka.client.service-url.defaultZone
 * (HEUREKA_URLS). "greeter" registers; "caller" finds it through Spring's
 * DiscoveryClient and calls it through a load-balanced RestClient by service
 * name. Then the node greeter talks to is stopped through the Go driver's
 * HEUREKA_CONTROL_URL, and both apps go on through the other node.
 *
 * <p>Which node is "first" for an app is the Eureka client's choice: it
 * shuffles the URLs of its zone (ResolverUtils.randomize) and keeps the one
 * that answers until it fails. So the driver stops the node that took
 * greeter's registration and renewals, which is greeter's first node
 * whatever the shuffle; its answer names the survivor and says whether the
 * caller was fetching from the stopped node too (then both fail over).
 */
class SpringCloudClientTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final List<ConfigurableApplicationContext> apps = new ArrayList<>();

    @AfterEach
    void closeApps() {
        for (int i = apps.size() - 1; i >= 0; i--) {
            apps.get(i).close();
        }
    }

    static String env(String name) {
        String v = System.getenv(name);
        Assumptions.assumeTrue(v != null && !v.isEmpty(),
                name + " is unset: these tests need the nodes that `go test ./clients/java/` starts");
        return v;
    }

    /** What a Spring user puts in application.yml, with 1 s intervals so the test is quick. */
    static Map<String, Object> common(String defaultZone) {
        Map<String, Object> p = new HashMap<>();
        p.put("eureka.client.service-url.defaultZone", defaultZone);
        p.put("eureka.client.registry-fetch-interval-seconds", "1");
        p.put("eureka.client.initial-instance-info-replication-interval-seconds", "1");
        p.put("eureka.client.instance-info-replication-interval-seconds", "1");
        p.put("eureka.client.eureka-server-connect-timeout-seconds", "2");
        p.put("eureka.client.eureka-server-read-timeout-seconds", "5");
        p.put("eureka.instance.lease-renewal-interval-in-seconds", "1");
        p.put("eureka.instance.lease-expiration-duration-in-seconds", "10");
        p.put("eureka.instance.prefer-ip-address", "true");
        p.put("eureka.instance.ip-address", "127.0.0.1");
        p.put("spring.cloud.loadbalancer.cache.enabled", "false");
        p.put("server.port", "0");
        p.put("server.address", "127.0.0.1");
        p.put("spring.main.banner-mode", "off");
        return p;
    }

    private ConfigurableApplicationContext greeter(String defaultZone, String id) {
        Map<String, Object> p = common(defaultZone);
        p.put("spring.application.name", "greeter");
        p.put("eureka.instance.instance-id", id);
        p.put("eureka.client.fetch-registry", "false"); // it looks nothing up; the caller does
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(GreeterApp.class).properties(p).run();
        apps.add(ctx);
        return ctx;
    }

    private ConfigurableApplicationContext caller(String defaultZone) {
        Map<String, Object> p = common(defaultZone);
        p.put("spring.application.name", "caller");
        p.put("eureka.client.register-with-eureka", "false"); // it only looks up
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(CallerApp.class).properties(p).run();
        apps.add(ctx);
        return ctx;
    }

    private static int port(ConfigurableApplicationContext ctx) {
        return ((WebServerApplicationContext) ctx).getWebServer().getPort();
    }

    @Test
    void registerDiscoverCallAndFailOver() throws Exception {
        String urls = env("HEUREKA_URLS");
        String control = env("HEUREKA_CONTROL_URL");

        ConfigurableApplicationContext g1 = greeter(urls, "greeter-1");
        ConfigurableApplicationContext caller = caller(urls);
        DiscoveryClient discovery = caller.getBean(DiscoveryClient.class);
        // The @LoadBalanced builder CallerApp declares (Boot also has a plain one).
        RestClient lb = caller.getBean("loadBalancedRestClientBuilder", RestClient.Builder.class).build();

        // ---- registered through defaultZone, found through Spring's DiscoveryClient.
        eventually(() -> "caller's DiscoveryClient lists greeter-1: " + discovery.getInstances("greeter"),
                () -> ids(discovery.getInstances("greeter")).contains("greeter-1"));
        assertTrue(discovery.getServices().contains("greeter"), "services: " + discovery.getServices());
        ServiceInstance si = discovery.getInstances("greeter").get(0);
        assertEquals(port(g1), si.getPort(), "the port greeter's web server got");
        assertEquals("127.0.0.1", si.getHost());
        // ---- and called by service name through the load balancer.
        assertEquals("hello from greeter-1", lb.get().uri("http://greeter/hello").retrieve().body(String.class));
        // Both nodes hold it.
        for (String u : urls.split(",")) {
            assertEquals("UP", instance(u, "GREETER", "greeter-1").at("/instance/status").asText(), u);
        }

        // ---- the node greeter uses goes away.
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(control + "/stop-used"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        JsonNode stop = JSON.readTree(r.body());
        long stoppedAt = System.currentTimeMillis();
        String survivor = stop.get("survivor").asText();
        System.out.println("control: " + r.body());

        // greeter renews through the survivor: its lease there is renewed twice after the stop.
        long[] renewal = {stoppedAt};
        for (int i = 0; i < 2; i++) {
            long after = renewal[0];
            eventually(() -> "greeter-1 renewed on " + survivor + " after " + after, () -> {
                renewal[0] = instance(survivor, "GREETER", "greeter-1").at("/instance/leaseInfo/lastRenewalTimestamp").asLong();
                return renewal[0] > after;
            });
        }

        // caller keeps fetching (from the survivor, whichever node it used): it sees a
        // greeter started after the stop, and the load balancer reaches both.
        ConfigurableApplicationContext g2 = greeter(urls, "greeter-2");
        eventually(() -> "caller's DiscoveryClient lists greeter-2: " + ids(discovery.getInstances("greeter")),
                () -> ids(discovery.getInstances("greeter")).containsAll(Set.of("greeter-1", "greeter-2")));
        Set<String> answers = new HashSet<>();
        eventually(() -> "load-balanced calls reach both greeters: " + answers, () -> {
            answers.add(lb.get().uri("http://greeter/hello").retrieve().body(String.class));
            return answers.containsAll(Set.of("hello from greeter-1", "hello from greeter-2"));
        });

        // ---- shutdown deregisters both greeters, through the survivor.
        g2.close();
        g1.close();
        eventually(() -> "greeters gone from " + survivor,
                () -> instance(survivor, "GREETER", "greeter-1") == null && instance(survivor, "GREETER", "greeter-2") == null);
    }

    static Set<String> ids(List<ServiceInstance> list) {
        Set<String> s = new HashSet<>();
        for (ServiceInstance i : list) {
            s.add(i.getInstanceId());
        }
        return s;
    }

    /** GET {base}apps/{app}/{id} in JSON; null on 404. */
    private static JsonNode instance(String base, String app, String id) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "apps/" + app + "/" + id))
                    .header("Accept", "application/json").timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 404) {
                return null;
            }
            assertEquals(200, r.statusCode(), r.body());
            return JSON.readTree(r.body());
        } catch (IOException e) {
            throw new AssertionError(base + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    static void eventually(Supplier<String> what, BooleanSupplier cond) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        RuntimeException last = null;
        while (true) {
            try {
                if (cond.getAsBoolean()) {
                    return;
                }
            } catch (RuntimeException e) {
                last = e;
            }
            if (System.nanoTime() > deadline) {
                fail("not within " + WAIT.toSeconds() + " s: " + what.get()
                        + (last == null ? "" : " (last error: " + last + ")"));
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted: " + what.get());
            }
        }
    }
}
