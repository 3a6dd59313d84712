package io.heureka.spring.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.net.httpserver.HttpServer;
import io.heureka.spring.stream.apps.caller.CallerApp;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.client.RestClient;

/**
 * The measurement behind `make spring-starter-measure` (not part of the tests): a Spring Boot service B calls A by
 * name through a load-balanced RestClient, B's Eureka client on one node (HEUREKA_MEASURE_B_URL), A's instances
 * registered over REST on another node of the same cluster (HEUREKA_MEASURE_A_URL). Per round, a new A instance
 * (an HTTP server in this JVM) registers: the time from sending the registration to B's first call landing on it;
 * then it is cancelled (its server stays up): the time from sending the cancel to B's last call landing on it.
 * B calls A in a loop on a thread of its own, one call after the other, all the time. Modes:
 *
 * <ul>
 *   <li>stock: the Eureka client and LoadBalancer defaults (30 s fetch interval, 35 s cache TTL), no starter;
 *   <li>fast: no starter, registry-fetch-interval-seconds=1 and spring.cloud.loadbalancer.cache.ttl=1s;
 *   <li>starter: the starter, the defaults otherwise.
 * </ul>
 *
 * HEUREKA_MEASURE_ROUNDS (10) rounds per mode, HEUREKA_MEASURE_STOCK_ROUNDS (3) for stock (a round takes up to two
 * minutes there), HEUREKA_MEASURE_MODES (starter,fast,stock) to choose.
 */
@EnabledIfEnvironmentVariable(named = "HEUREKA_MEASURE_B_URL", matches = ".+")
class EndToEndMeasure {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final Duration LIMIT = Duration.ofMinutes(3);
    /** Consecutive calls not landing on the cancelled instance after which it is taken as gone from B's list. */
    private static final int GONE_AFTER = 200;

    static {
        // Without it the JDK's HttpServer answers a keep-alive request ~40 ms late (Nagle against delayed ACKs),
        // which would cap B at ~25 calls/s and blur the figures by as much.
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    @Test
    void registrationToFirstCallAndCancelToLastCall() throws Exception {
        String bUrl = slash(System.getenv("HEUREKA_MEASURE_B_URL"));
        String aUrl = slash(System.getenv("HEUREKA_MEASURE_A_URL"));
        int rounds = intEnv("HEUREKA_MEASURE_ROUNDS", 10);
        int stockRounds = intEnv("HEUREKA_MEASURE_STOCK_ROUNDS", 3);
        String modes = System.getenv().getOrDefault("HEUREKA_MEASURE_MODES", "starter,fast,stock");
        Map<String, long[][]> results = new LinkedHashMap<>();
        for (String mode : modes.split(",")) {
            results.put(mode, measure(mode.trim(), bUrl, aUrl, mode.trim().equals("stock") ? stockRounds : rounds));
        }
        System.out.println();
        System.out.println("| mode | rounds | registration → first call: median / max (ms) | cancel → last call: median / max (ms) |");
        System.out.println("|---|---|---|---|");
        for (Map.Entry<String, long[][]> e : results.entrySet()) {
            long[] reg = e.getValue()[0];
            long[] can = e.getValue()[1];
            System.out.printf("| %s | %d | %d / %d | %d / %d |%n", e.getKey(), reg.length,
                    median(reg), max(reg), median(can), max(can));
        }
    }

    private long[][] measure(String mode, String bUrl, String aUrl, int rounds) throws Exception {
        String app = "a-" + mode;
        Map<String, Object> p = new HashMap<>();
        p.put("eureka.client.service-url.defaultZone", bUrl);
        p.put("eureka.client.register-with-eureka", "false");
        p.put("spring.application.name", "b-" + mode);
        p.put("server.port", "0");
        p.put("server.address", "127.0.0.1");
        p.put("spring.main.banner-mode", "off");
        switch (mode) {
            case "stock" -> {
                p.put("heureka.stream.enabled", "false");
                p.put("heureka.stream.clear-load-balancer-cache", "false");
            }
            case "fast" -> {
                p.put("heureka.stream.enabled", "false");
                p.put("heureka.stream.clear-load-balancer-cache", "false");
                p.put("eureka.client.registry-fetch-interval-seconds", "1");
                p.put("spring.cloud.loadbalancer.cache.ttl", "1s");
            }
            case "starter" -> { }
            default -> throw new IllegalArgumentException("mode " + mode + ": stock, fast or starter");
        }
        ScheduledExecutorService renewer = Executors.newSingleThreadScheduledExecutor();
        List<HttpServer> servers = new ArrayList<>();
        try {
            // A's first instance, renewed, there all along: B always has somewhere to call.
            HttpServer base = serve(app + "-base");
            servers.add(base);
            register(aUrl, app, app + "-base", base.getAddress().getPort());
            renewer.scheduleAtFixedRate(() -> renew(aUrl, app, app + "-base"), 20, 20, TimeUnit.SECONDS);

            try (ConfigurableApplicationContext b = new SpringApplicationBuilder(CallerApp.class).properties(p).run()) {
                RestClient lb = b.getBean("loadBalancedRestClientBuilder", RestClient.Builder.class).build();
                long deadline = System.nanoTime() + LIMIT.toNanos();
                while (!(app + "-base").equals(call(lb, app))) {
                    if (System.nanoTime() > deadline) {
                        fail(mode + ": B never reached " + app + "-base");
                    }
                    Thread.sleep(100);
                }
                // B calls A all the time, one call after the other, on a thread of its own.
                Map<String, Long> firstAt = new ConcurrentHashMap<>();
                Map<String, Long> lastAt = new ConcurrentHashMap<>();
                Map<String, Long> lastCall = new ConcurrentHashMap<>();
                Map<String, Long> landed = new ConcurrentHashMap<>();
                AtomicLong calls = new AtomicLong();
                AtomicBoolean stop = new AtomicBoolean();
                Thread caller = new Thread(() -> {
                    while (!stop.get()) {
                        String who = call(lb, app);
                        long now = System.nanoTime();
                        long n = calls.incrementAndGet();
                        firstAt.putIfAbsent(who, now);
                        lastAt.put(who, now);
                        lastCall.put(who, n);
                        landed.merge(who, 1L, Long::sum);
                    }
                }, "b-calls-a");
                caller.start();
                long callsFrom = System.nanoTime();
                long[] reg = new long[rounds];
                long[] can = new long[rounds];
                try {
                    for (int i = 0; i < rounds; i++) {
                        String id = app + "-" + i;
                        HttpServer s = serve(id);
                        servers.add(s);
                        long registered = System.nanoTime();
                        register(aUrl, app, id, s.getAddress().getPort());
                        long registerTook = System.nanoTime() - registered;
                        deadline = registered + LIMIT.toNanos();
                        while (!firstAt.containsKey(id)) {
                            if (System.nanoTime() > deadline) {
                                fail(mode + ": no call landed on " + id + " within " + LIMIT);
                            }
                            Thread.sleep(1);
                        }
                        reg[i] = (firstAt.get(id) - registered) / 1_000_000;

                        Thread.sleep(200); // B goes on calling the new instance for a while
                        long before = landed.get(id);
                        long cancelled = System.nanoTime();
                        send("DELETE", aUrl + "apps/" + app + "/" + id, 200);
                        long cancelTook = System.nanoTime() - cancelled;
                        deadline = cancelled + LIMIT.toNanos();
                        // Gone from B's list once GONE_AFTER calls in a row went elsewhere.
                        while (calls.get() - lastCall.get(id) < GONE_AFTER) {
                            if (System.nanoTime() > deadline) {
                                fail(mode + ": calls still land on " + id + " " + LIMIT + " after its cancel");
                            }
                            Thread.sleep(1);
                        }
                        can[i] = Math.max(0, lastAt.get(id) - cancelled) / 1_000_000;
                        s.stop(0);
                        System.out.printf("%s round %d: registration -> first call %d ms, cancel -> last call %d ms"
                                + " (the register request took %d ms, the cancel %d ms; %d calls landed on it before the"
                                + " cancel, %d after)%n",
                                mode, i + 1, reg[i], can[i], registerTook / 1_000_000, cancelTook / 1_000_000,
                                before, landed.get(id) - before);
                    }
                } finally {
                    stop.set(true);
                    caller.join(10_000);
                }
                System.out.printf("%s: B made %.0f calls/s to A%n", mode,
                        calls.get() / ((System.nanoTime() - callsFrom) / 1e9));
                return new long[][] {reg, can};
            }
        } finally {
            renewer.shutdownNow();
            for (HttpServer s : servers) {
                s.stop(0);
            }
            send("DELETE", aUrl + "apps/" + app + "/" + app + "-base", -1);
        }
    }

    private static String call(RestClient lb, String app) {
        try {
            return lb.get().uri("http://" + app + "/").retrieve().body(String.class);
        } catch (RuntimeException e) {
            return "error: " + e;
        }
    }

    /** An HTTP server on loopback that answers every request with id. */
    private static HttpServer serve(String id) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.createContext("/", ex -> {
            byte[] body = id.getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(body);
            }
        });
        s.setExecutor(Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "a-" + id);
            t.setDaemon(true);
            return t;
        }));
        s.start();
        return s;
    }

    private static void register(String base, String app, String id, int port) {
        String body = """
                {"instance":{"instanceId":"%2$s","hostName":"127.0.0.1","app":"%1$s","ipAddr":"127.0.0.1",
                 "status":"UP","port":{"$":%3$d,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},
                 "vipAddress":"%1$s","dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},
                 "leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90}}}"""
                .formatted(app, id, port);
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "apps/" + app))
                    .header("Content-Type", "application/json").timeout(Duration.ofSeconds(10))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(204, r.statusCode(), "register " + id + ": " + r.body());
        } catch (IOException e) {
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static void renew(String base, String app, String id) {
        send("PUT", base + "apps/" + app + "/" + id, -1);
    }

    /** Sends a body-less request; want -1 accepts any answer and any failure. */
    private static void send(String method, String url, int want) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
                    .method(method, HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            if (want >= 0) {
                assertEquals(want, r.statusCode(), method + " " + url + ": " + r.body());
            }
        } catch (IOException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (want >= 0) {
                throw new AssertionError(method + " " + url + ": " + e, e);
            }
        }
    }

    private static String slash(String s) {
        if (s == null || s.isEmpty()) {
            throw new IllegalStateException("HEUREKA_MEASURE_A_URL and HEUREKA_MEASURE_B_URL must both be set");
        }
        return s.endsWith("/") ? s : s + "/";
    }

    private static int intEnv(String name, int def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : Integer.parseInt(v);
    }

    private static long median(long[] v) {
        List<Long> l = new ArrayList<>();
        for (long x : v) {
            l.add(x);
        }
        Collections.sort(l);
        return l.isEmpty() ? 0 : l.get(l.size() / 2);
    }

    private static long max(long[] v) {
        long m = 0;
        for (long x : v) {
            m = Math.max(m, x);
        }
        return m;
    }
}
