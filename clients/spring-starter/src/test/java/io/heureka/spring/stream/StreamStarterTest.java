package io.heureka.spring.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.heureka.spring.stream.apps.caller.CallerApp;
import io.heureka.spring.stream.apps.greeter.GreeterApp;
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
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.client.RestClient;

/**
 * Spring Boot apps with the starter on their classpath and no code for it, against a real Heureka node
 * (HEUREKA_URL), against the same node behind a proxy that answers 404 on the stream, as a plain Eureka
 * server does (HEUREKA_PLAIN_URL), against Spring Cloud Netflix's Eureka server (HEUREKA_EUREKA_URL), and against a two-node cluster (HEUREKA_CLUSTER_URLS) one of whose nodes
 * HEUREKA_CONTROL_URL stops on request. The Go driver (clients/springstarter) starts them; run without them,
 * every test is skipped.
 *
 * <p>The callers keep the Eureka client's registry-fetch-interval-seconds at its default of 30 and the
 * LoadBalancer's cache at its default TTL of 35 s. A new instance reached through the load balancer within
 * {@link #PROMPT} of its registration can then only be the starter's doing; a second caller with
 * heureka.stream.enabled=false, started at the same time, shows that it does not happen without it.
 */
class StreamStarterTest {

    /** "Promptly": a third of the fetch interval the callers keep (the starter takes tens of ms). */
    private static final Duration PROMPT = Duration.ofSeconds(10);
    /** For what is not under test (an app's registration, a proxy's answer). */
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final List<ConfigurableApplicationContext> apps = new ArrayList<>();

    @AfterEach
    void closeApps() {
        for (int i = apps.size() - 1; i >= 0; i--) {
            apps.get(i).close();
        }
        apps.clear();
    }

    private static String env(String name) {
        String v = System.getenv(name);
        Assumptions.assumeTrue(v != null && !v.isEmpty(),
                name + " is unset: these tests need the node that `go test ./clients/springstarter/` starts");
        return v.endsWith("/") ? v : v + "/";
    }

    /** What a Spring user puts in application.yml; the fetch interval and the LoadBalancer cache are left alone. */
    private static Map<String, Object> common(String defaultZone) {
        Map<String, Object> p = new HashMap<>();
        p.put("eureka.client.service-url.defaultZone", defaultZone);
        p.put("eureka.instance.prefer-ip-address", "true");
        p.put("eureka.instance.ip-address", "127.0.0.1");
        p.put("server.port", "0");
        p.put("server.address", "127.0.0.1");
        p.put("spring.main.banner-mode", "off");
        return p;
    }

    /** An instance of app that registers (and renews) and fetches nothing. */
    private ConfigurableApplicationContext greeter(String defaultZone, String app, String id) {
        Map<String, Object> p = common(defaultZone);
        p.put("spring.application.name", app);
        p.put("eureka.instance.instance-id", id);
        p.put("eureka.client.fetch-registry", "false");
        p.put("eureka.client.initial-instance-info-replication-interval-seconds", "1");
        p.put("eureka.instance.lease-renewal-interval-in-seconds", "1");
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(GreeterApp.class).properties(p).run();
        apps.add(ctx);
        return ctx;
    }

    /** A caller that only looks up; extra is added to (or overrides) the common properties. */
    private ConfigurableApplicationContext caller(String defaultZone, String name, Map<String, Object> extra) {
        Map<String, Object> p = common(defaultZone);
        p.put("spring.application.name", name);
        p.put("eureka.client.register-with-eureka", "false");
        p.putAll(extra);
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(CallerApp.class).properties(p).run();
        apps.add(ctx);
        return ctx;
    }

    private static RestClient lb(ConfigurableApplicationContext caller) {
        return caller.getBean("loadBalancedRestClientBuilder", RestClient.Builder.class).build();
    }

    private static String call(RestClient lb, String app) {
        return lb.get().uri("http://" + app + "/hello").retrieve().body(String.class);
    }

    @Test
    void registrationAndCancelReachDiscoveryAndLoadBalancerPromptly() throws Exception {
        String url = env("HEUREKA_URL");
        greeter(url, "greeter", "greeter-1");
        await(WAIT, "greeter-1 registered", () -> registered(url, "GREETER", "greeter-1"));

        ConfigurableApplicationContext caller = caller(url, "caller", Map.of());
        long stockStart = System.nanoTime();
        ConfigurableApplicationContext stock = caller(url, "stock-caller", Map.of("heureka.stream.enabled", "false"));
        assertNull(stock.getBeanProvider(HeurekaStreamWatcher.class).getIfAvailable(),
                "heureka.stream.enabled=false leaves the stock client");
        HeurekaStreamWatcher watcher = caller.getBean(HeurekaStreamWatcher.class);
        await(WAIT, () -> "the caller follows the stream: " + watcher.state(),
                () -> watcher.state() == HeurekaStreamWatcher.State.STREAMING);

        DiscoveryClient discovery = caller.getBean(DiscoveryClient.class);
        DiscoveryClient stockDiscovery = stock.getBean(DiscoveryClient.class);
        RestClient lb = lb(caller);
        RestClient stockLb = lb(stock);
        // Both load balancers now hold [greeter-1] in their caches (35 s).
        assertEquals("hello from greeter-1", call(lb, "greeter"));
        assertEquals("hello from greeter-1", call(stockLb, "greeter"));
        long refreshesBefore = watcher.refreshes();

        // ---- a new instance, registered by another client.
        greeter(url, "greeter", "greeter-2");
        long registeredAt = await(WAIT, "greeter-2 registered", () -> registered(url, "GREETER", "greeter-2"));
        long visibleAt = await(PROMPT, "the caller's DiscoveryClient lists greeter-2",
                () -> ids(discovery.getInstances("greeter")).contains("greeter-2"));
        long routedAt = await(PROMPT, "a load-balanced call lands on greeter-2",
                () -> call(lb, "greeter").equals("hello from greeter-2"));
        System.out.printf("starter: greeter-2 registered -> in DiscoveryClient %d ms, -> first routed call %d ms%n",
                ms(visibleAt - registeredAt), ms(routedAt - registeredAt));
        assertTrue(watcher.refreshes() > refreshesBefore, "the stream triggered the refresh");

        // Without the starter, the same app with the same settings does not see it before its first poll.
        if (ms(System.nanoTime() - stockStart) < 25_000) {
            assertFalse(ids(stockDiscovery.getInstances("greeter")).contains("greeter-2"),
                    "the stock caller fetched greeter-2 before its first 30 s poll");
            for (int i = 0; i < 4; i++) {
                assertEquals("hello from greeter-1", call(stockLb, "greeter"), "the stock caller's load balancer");
            }
        } else {
            System.out.println("the machine is slow: the stock caller's first poll may have run; not compared");
        }

        // ---- that instance goes (shutdown deregisters: a cancel).
        closeApp(apps.size() - 1);
        long cancelledAt = await(WAIT, "greeter-2 cancelled", () -> !registered(url, "GREETER", "greeter-2"));
        long droppedAt = await(PROMPT, "the caller's DiscoveryClient drops greeter-2",
                () -> !ids(discovery.getInstances("greeter")).contains("greeter-2"));
        long allOneAt = await(PROMPT, "six load-balanced calls in a row land on greeter-1", () -> {
            for (int i = 0; i < 6; i++) {
                if (!call(lb, "greeter").equals("hello from greeter-1")) {
                    return false;
                }
            }
            return true;
        });
        System.out.printf("starter: greeter-2 cancelled -> out of DiscoveryClient %d ms, -> six calls on greeter-1 %d ms%n",
                ms(droppedAt - cancelledAt), ms(allOneAt - cancelledAt));
        assertEquals(HeurekaStreamWatcher.State.STREAMING, watcher.state());
        System.out.printf("starter: %d events, %d refreshes%n", watcher.events(), watcher.refreshes());
    }

    @Test
    void withoutStreamTheClientPollsAndTheLoadBalancerFollowsItsPolls() throws Exception {
        pollsWithoutStream(env("HEUREKA_PLAIN_URL"), "plain");
    }

    /** The same against Spring Cloud Netflix's Eureka server, which has no stream (404). */
    @Test
    void againstAPlainEurekaServerTheClientPolls() throws Exception {
        pollsWithoutStream(env("HEUREKA_EUREKA_URL"), "eureka");
    }

    private void pollsWithoutStream(String plain, String prefix) throws Exception {
        String app = prefix + "-greeter";
        String APP = app.toUpperCase();
        greeter(plain, app, prefix + "-1");
        await(WAIT, prefix + "-1 registered", () -> registered(plain, APP, prefix + "-1"));

        // Polling every second, the LoadBalancer cache at its 35 s default.
        ConfigurableApplicationContext caller = caller(plain, prefix + "-caller",
                Map.of("eureka.client.registry-fetch-interval-seconds", "1"));
        HeurekaStreamWatcher watcher = caller.getBean(HeurekaStreamWatcher.class);
        await(WAIT, () -> "the starter falls back to polling: " + watcher.state(),
                () -> watcher.state() == HeurekaStreamWatcher.State.POLLING);
        assertEquals(0, watcher.connections(), "no stream was opened");
        DiscoveryClient discovery = caller.getBean(DiscoveryClient.class);
        RestClient lb = lb(caller);
        await(WAIT, prefix + "-1 found", () -> ids(discovery.getInstances(app)).contains(prefix + "-1"));
        assertEquals("hello from " + prefix + "-1", call(lb, app));

        greeter(plain, app, prefix + "-2");
        long registeredAt = await(WAIT, prefix + "-2 registered", () -> registered(plain, APP, prefix + "-2"));
        long routedAt = await(PROMPT, "a load-balanced call lands on " + prefix + "-2 (polled, the cache cleared on refresh)",
                () -> call(lb, app).equals("hello from " + prefix + "-2"));
        System.out.printf("%s, polling at 1 s: %s-2 registered -> first routed call %d ms%n", prefix, prefix,
                ms(routedAt - registeredAt));

        closeApp(apps.size() - 1);
        await(WAIT, prefix + "-2 cancelled", () -> !registered(plain, APP, prefix + "-2"));
        await(PROMPT, "six load-balanced calls in a row land on " + prefix + "-1", () -> {
            for (int i = 0; i < 6; i++) {
                if (!call(lb, app).equals("hello from " + prefix + "-1")) {
                    return false;
                }
            }
            return true;
        });
        assertEquals(0, watcher.connections(), "no stream was opened");
        assertEquals(0, watcher.events());
        assertEquals(HeurekaStreamWatcher.State.POLLING, watcher.state());
    }

    @Test
    void whenItsNodeStopsTheStreamMovesToAnotherNode() throws Exception {
        String urls = env("HEUREKA_CLUSTER_URLS");
        String control = env("HEUREKA_CONTROL_URL");
        ConfigurableApplicationContext caller = caller(urls, "pair-caller", Map.of());
        HeurekaStreamWatcher watcher = caller.getBean(HeurekaStreamWatcher.class);
        long t0 = System.nanoTime();
        await(WAIT, () -> "the caller follows the stream: " + watcher.state(),
                () -> watcher.state() == HeurekaStreamWatcher.State.STREAMING);
        System.out.printf("pair-caller streaming after %d ms%n", ms(System.nanoTime() - t0));
        String followed = watcher.streamUrl();
        String stopped = followed.substring(0, followed.length() - "stream".length());
        String survivor = null;
        for (String u : urls.split(",")) {
            if (!u.equals(stopped)) {
                survivor = u;
            }
        }
        assertNotNull(survivor, "the stream follows " + followed + ", not one of " + urls);

        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(control + "stop"))
                .POST(HttpRequest.BodyPublishers.ofString(stopped)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), "stopping " + stopped + ": " + r.body());
        long stoppedAt = System.nanoTime();
        await(WAIT, () -> "the stream moves to " + watcher.streamUrl() + " (" + watcher.state() + ")",
                () -> watcher.state() == HeurekaStreamWatcher.State.STREAMING && watcher.connections() >= 2
                        && !followed.equals(watcher.streamUrl()));

        System.out.printf("the stream moved from %s to %s in %d ms%n", followed, watcher.streamUrl(),
                ms(System.nanoTime() - stoppedAt));
        // A change on the survivor still reaches the caller before any poll could.
        String only = survivor;
        DiscoveryClient discovery = caller.getBean(DiscoveryClient.class);
        greeter(only, "pair-greeter", "pair-1");
        long registeredAt = await(WAIT, "pair-1 registered", () -> registered(only, "PAIR-GREETER", "pair-1"));
        long visibleAt = await(PROMPT, "the caller's DiscoveryClient lists pair-1 after the failover",
                () -> ids(discovery.getInstances("pair-greeter")).contains("pair-1"));
        System.out.printf("after the failover: pair-1 registered -> in DiscoveryClient %d ms%n",
                ms(visibleAt - registeredAt));
        assertEquals("hello from pair-1", call(lb(caller), "pair-greeter"));
    }

    private void closeApp(int i) {
        apps.remove(i).close();
    }

    private static long ms(long nanos) {
        return nanos / 1_000_000;
    }

    private static Set<String> ids(List<ServiceInstance> list) {
        Set<String> s = new HashSet<>();
        for (ServiceInstance i : list) {
            s.add(i.getInstanceId());
        }
        return s;
    }

    /** Whether base holds app/id (GET {base}apps/{app}/{id}). */
    private static boolean registered(String base, String app, String id) {
        try {
            HttpResponse<Void> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "apps/" + app + "/" + id))
                    .header("Accept", "application/json").timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.discarding());
            if (r.statusCode() != 200 && r.statusCode() != 404) {
                throw new AssertionError(base + "apps/" + app + "/" + id + ": " + r.statusCode());
            }
            return r.statusCode() == 200;
        } catch (IOException e) {
            throw new AssertionError(base + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Waits up to limit for cond, checking every 10 ms; returns System.nanoTime() when it held. */
    private static long await(Duration limit, String what, BooleanSupplier cond) {
        return await(limit, () -> what, cond);
    }

    private static long await(Duration limit, Supplier<String> what, BooleanSupplier cond) {
        long deadline = System.nanoTime() + limit.toNanos();
        RuntimeException last = null;
        while (true) {
            try {
                if (cond.getAsBoolean()) {
                    return System.nanoTime();
                }
            } catch (RuntimeException e) {
                last = e;
            }
            if (System.nanoTime() > deadline) {
                fail("not within " + limit.toSeconds() + " s: " + what.get()
                        + (last == null ? "" : " (last error: " + last + ")"));
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted: " + what.get());
            }
        }
    }
}
