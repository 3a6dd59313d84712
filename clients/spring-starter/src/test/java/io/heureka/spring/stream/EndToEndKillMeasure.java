package io.heureka.spring.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.net.httpserver.HttpServer;
import io.heureka.spring.stream.apps.caller.CallerApp;
import io.heureka.spring.stream.apps.greeter.GreeterApp;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.client.RestClient;

/**
 * The kill -9 case of `make spring-starter-measure` (HEUREKA_MEASURE_CASES with kill; not part of the tests): the
 * set-up of {@link EndToEndMeasure} (B calls A by name through a load-balanced RestClient, in a loop, B's Eureka
 * client on HEUREKA_MEASURE_B_URL, A on HEUREKA_MEASURE_A_URL, an A instance "base" there all along), but each
 * round's A instance is a JVM of its own ({@link GreeterApp} with the stock Eureka client, which registers and
 * renews itself) that is sent SIGKILL: no cancel, its port refuses connections at once, and the registry drops it
 * only when its lease runs out and the application's owner evicts it (every 500 ms in the Go harness).
 *
 * <p>Per round: start the A process, wait for B's first call on it, wait a random part of one renewal interval
 * (so that the kill falls anywhere in the renewal cycle, as a real one does), kill -9 it, then measure from the
 * kill to (1) the instance's removal from B's node (GET apps/{app}/{id} answers 404, polled every 50 ms) and (2)
 * B's last call landing on it, and (3) their difference, B's own lag behind its node (negative by up to the 50 ms of
 * polling when B's node and B drop it together). A call lands on the dead instance when it answers (a call in flight) or fails: the
 * only other A instance is base, an in-JVM server that answers every call, so a failed call is a call B's load
 * balancer sent to the dead instance. B is taken to have stopped choosing it once the registry dropped it and
 * GONE_AFTER calls in a row went to base.
 *
 * <p>HEUREKA_MEASURE_LEASE: A's lease as duration/renewal in seconds (eureka.instance.lease-expiration-duration-
 * in-seconds / lease-renewal-interval-in-seconds), 90/30 (Eureka's defaults) unless set. Rounds and modes as in
 * EndToEndMeasure: HEUREKA_MEASURE_ROUNDS (10), HEUREKA_MEASURE_STOCK_ROUNDS (3), HEUREKA_MEASURE_MODES.
 */
@EnabledIfEnvironmentVariable(named = "HEUREKA_MEASURE_B_URL", matches = ".+")
class EndToEndKillMeasure {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    /** Longest wait for A's JVM to start and B's first call on it (stock: fetch interval + cache TTL, 65 s). */
    private static final Duration JOIN_LIMIT = Duration.ofMinutes(3);
    /** Consecutive calls on base after which the killed instance is taken as gone from B's list. */
    private static final int GONE_AFTER = 200;
    private static final String ERROR = "error";

    static {
        // As in EndToEndMeasure: without it base answers keep-alive requests ~40 ms late.
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    /** A's JVM: the greeter app, its properties as --name=value arguments. */
    public static final class Greeter {
        public static void main(String[] args) {
            SpringApplication.run(GreeterApp.class, args);
        }
    }

    @Test
    void killToLastCall() throws Exception {
        String bUrl = slash(System.getenv("HEUREKA_MEASURE_B_URL"));
        String aUrl = slash(System.getenv("HEUREKA_MEASURE_A_URL"));
        int rounds = intEnv("HEUREKA_MEASURE_ROUNDS", 10);
        int stockRounds = intEnv("HEUREKA_MEASURE_STOCK_ROUNDS", 3);
        String modes = System.getenv().getOrDefault("HEUREKA_MEASURE_MODES", "starter,fast,stock");
        String[] lease = System.getenv().getOrDefault("HEUREKA_MEASURE_LEASE", "90/30").split("/");
        int duration = Integer.parseInt(lease[0].trim());
        int renewal = Integer.parseInt(lease[1].trim());
        Map<String, long[][]> results = new LinkedHashMap<>();
        for (String mode : modes.split(",")) {
            mode = mode.trim();
            results.put(mode, measure(mode, bUrl, aUrl, mode.equals("stock") ? stockRounds : rounds, duration, renewal));
        }
        System.out.println();
        System.out.printf("kill -9 of an A instance, its lease %d s, renewed every %d s; figures in ms, median / max:%n",
                duration, renewal);
        System.out.println("| mode | rounds | kill → gone from B's node | kill → B's last call on it"
                + " | gone from B's node → B's last call | failed calls on it |");
        System.out.println("|---|---|---|---|---|---|");
        for (Map.Entry<String, long[][]> e : results.entrySet()) {
            long[] gone = e.getValue()[0];
            long[] last = e.getValue()[1];
            long[] failed = e.getValue()[2];
            long[] lag = new long[gone.length];
            for (int i = 0; i < lag.length; i++) {
                lag[i] = last[i] - gone[i];
            }
            System.out.printf("| %s | %d | %d / %d | %d / %d | %d / %d | %d / %d |%n", e.getKey(), gone.length,
                    median(gone), max(gone), median(last), max(last), median(lag), max(lag), median(failed),
                    max(failed));
        }
    }

    private long[][] measure(String mode, String bUrl, String aUrl, int rounds, int duration, int renewal)
            throws Exception {
        String app = "k-" + mode;
        Map<String, Object> p = new HashMap<>();
        p.put("eureka.client.service-url.defaultZone", bUrl);
        p.put("eureka.client.register-with-eureka", "false");
        p.put("spring.application.name", "kb-" + mode);
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
        HttpServer base = null;
        List<Process> processes = new ArrayList<>();
        try {
            base = serve(app + "-base");
            register(aUrl, app, app + "-base", base.getAddress().getPort());
            renewer.scheduleAtFixedRate(() -> send("PUT", aUrl + "apps/" + app + "/" + app + "-base", -1),
                    20, 20, TimeUnit.SECONDS);

            try (ConfigurableApplicationContext b = new SpringApplicationBuilder(CallerApp.class).properties(p).run()) {
                RestClient lb = b.getBean("loadBalancedRestClientBuilder", RestClient.Builder.class).build();
                long deadline = System.nanoTime() + JOIN_LIMIT.toNanos();
                while (!(app + "-base").equals(call(lb, app))) {
                    if (System.nanoTime() > deadline) {
                        fail(mode + ": B never reached " + app + "-base");
                    }
                    Thread.sleep(100);
                }
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
                long[] gone = new long[rounds];
                long[] last = new long[rounds];
                long[] failed = new long[rounds];
                try {
                    for (int i = 0; i < rounds; i++) {
                        String id = app + "-" + i;
                        String answer = "hello from " + id;
                        long started = System.nanoTime();
                        Process a = startA(aUrl, app, id, duration, renewal);
                        processes.add(a);
                        deadline = started + JOIN_LIMIT.toNanos();
                        while (!firstAt.containsKey(answer)) {
                            if (!a.isAlive()) {
                                fail(mode + ": A's JVM " + id + " exited (" + a.exitValue() + "); its log: "
                                        + logOf(id));
                            }
                            if (System.nanoTime() > deadline) {
                                fail(mode + ": no call landed on " + id + " within " + JOIN_LIMIT);
                            }
                            Thread.sleep(5);
                        }
                        long joined = (firstAt.get(answer) - started) / 1_000_000;
                        // The kill falls anywhere in the renewal cycle.
                        Thread.sleep(200 + ThreadLocalRandom.current().nextLong(renewal * 1000L));
                        long renewedAt = lastRenewal(aUrl, app, id);
                        long sinceRenewal = renewedAt == 0 ? -1 : System.currentTimeMillis() - renewedAt;
                        long okBefore = landed.getOrDefault(answer, 0L);
                        long failedBefore = landed.getOrDefault(ERROR, 0L);

                        long killed = System.nanoTime();
                        a.destroyForcibly(); // SIGKILL (kill -9) on Linux and macOS
                        if (!a.waitFor(10, TimeUnit.SECONDS)) {
                            fail(mode + ": A's JVM " + id + " (pid " + a.pid() + ") did not die of SIGKILL");
                        }
                        long goneAt = 0;
                        long nextPoll = killed;
                        deadline = killed + Duration.ofSeconds(duration).plus(JOIN_LIMIT).toNanos();
                        while (true) {
                            long now = System.nanoTime();
                            if (goneAt == 0 && now >= nextPoll) {
                                nextPoll = now + 50_000_000;
                                if (status(bUrl + "apps/" + app + "/" + id) == 404) {
                                    goneAt = System.nanoTime();
                                }
                            }
                            long lastOn = Math.max(lastCall.getOrDefault(answer, 0L),
                                    lastCall.getOrDefault(ERROR, 0L));
                            if (goneAt != 0 && calls.get() - lastOn >= GONE_AFTER) {
                                break;
                            }
                            if (now > deadline) {
                                fail(mode + ": calls still land on " + id + " (or B's node still lists it) "
                                        + Duration.ofNanos(deadline - killed) + " after its kill");
                            }
                            Thread.sleep(1);
                        }
                        long lastOnAt = Math.max(lastAt.getOrDefault(answer, 0L), lastAt.getOrDefault(ERROR, 0L));
                        gone[i] = (goneAt - killed) / 1_000_000;
                        last[i] = Math.max(0, lastOnAt - killed) / 1_000_000;
                        long okAfter = landed.getOrDefault(answer, 0L) - okBefore;
                        failed[i] = landed.getOrDefault(ERROR, 0L) - failedBefore;
                        System.out.printf("%s kill round %d: kill -9 -> gone from B's node %d ms, kill -9 -> last call"
                                + " on it %d ms (%d calls failed on it, %d answered after the kill; killed %d ms after"
                                + " its last renewal; A's JVM start to B's first call on it %d ms)%n",
                                mode, i + 1, gone[i], last[i], failed[i], okAfter, sinceRenewal, joined);
                    }
                } finally {
                    stop.set(true);
                    caller.join(10_000);
                }
                System.out.printf("%s: B made %.0f calls/s to A%n", mode,
                        calls.get() / ((System.nanoTime() - callsFrom) / 1e9));
                return new long[][] {gone, last, failed};
            }
        } finally {
            renewer.shutdownNow();
            for (Process a : processes) {
                a.destroyForcibly();
            }
            if (base != null) {
                base.stop(0);
            }
            send("DELETE", aUrl + "apps/" + app + "/" + app + "-base", -1);
        }
    }

    /** Starts A's JVM: the greeter with the stock Eureka client, registering id with aUrl, output to a log. */
    private static Process startA(String aUrl, String app, String id, int duration, int renewal) throws IOException {
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                // Start fast on a small machine: C1 only, one GC thread.
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx192m",
                "-cp", cp, Greeter.class.getName(),
                "--spring.application.name=" + app,
                "--eureka.instance.instance-id=" + id,
                "--eureka.instance.prefer-ip-address=true",
                "--eureka.instance.ip-address=127.0.0.1",
                "--eureka.instance.lease-expiration-duration-in-seconds=" + duration,
                "--eureka.instance.lease-renewal-interval-in-seconds=" + renewal,
                "--eureka.client.service-url.defaultZone=" + aUrl,
                "--eureka.client.fetch-registry=false",
                "--eureka.client.initial-instance-info-replication-interval-seconds=1",
                "--heureka.stream.enabled=false",
                "--server.port=0",
                "--server.address=127.0.0.1",
                "--spring.main.banner-mode=off"));
        File log = logFile(id);
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
    }

    private static File logFile(String id) {
        return new File(System.getProperty("java.io.tmpdir"), "heureka-kill-measure-" + id + ".log");
    }

    private static String logOf(String id) {
        try {
            String s = Files.readString(logFile(id).toPath());
            return s.length() > 4000 ? s.substring(s.length() - 4000) : s;
        } catch (IOException e) {
            return e.toString();
        }
    }

    private static final Pattern LAST_RENEWAL = Pattern.compile("\"lastRenewalTimestamp\"\\s*:\\s*(\\d+)");

    /** The instance's lastRenewalTimestamp (ms) as its node reports it, 0 if it cannot be read. */
    private static long lastRenewal(String base, String app, String id) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + "apps/" + app + "/" + id))
                    .header("Accept", "application/json").timeout(Duration.ofSeconds(10)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            Matcher m = LAST_RENEWAL.matcher(r.body());
            return r.statusCode() == 200 && m.find() ? Long.parseLong(m.group(1)) : 0;
        } catch (IOException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    private static int status(String url) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create(url)).header("Accept", "application/json")
                    .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static String call(RestClient lb, String app) {
        try {
            return lb.get().uri("http://" + app + "/hello").retrieve().body(String.class);
        } catch (RuntimeException e) {
            return ERROR;
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
        long m = v.length == 0 ? 0 : Long.MIN_VALUE;
        for (long x : v) {
            m = Math.max(m, x);
        }
        return m;
    }
}
