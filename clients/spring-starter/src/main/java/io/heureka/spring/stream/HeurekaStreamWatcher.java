package io.heureka.spring.stream;

import com.netflix.discovery.EurekaClientConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Follows {@code GET <serviceUrl>stream} (Server-Sent Events) on one of the Eureka client's service URLs, and on
 * every event asks the {@link RegistryRefresher} for a refresh of the Eureka client's registry. The events are a
 * wake-up signal: what the app sees is what the stock client fetches and applies.
 *
 * <p>The URLs are the client's ({@code eureka.client.service-url.*}: the zones of its region in the order of
 * {@code eureka.client.availability-zones}, then {@code defaultZone}), tried in turn: a stream that ends is reopened
 * on the next URL at once (after a second if it lasted less; with one URL, resuming with {@code Last-Event-ID});
 * a URL that fails gives way to the next one at once, and when every URL failed in a row the watcher waits
 * (250 ms doubling to {@code heureka.stream.max-backoff}) before the next round. When every URL answers 404
 * the servers have no stream (plain Eureka): the watcher goes quiet for {@code heureka.stream.fallback-retry}
 * and the client polls as it always does.
 */
public class HeurekaStreamWatcher implements SmartLifecycle {

    /** What the watcher is doing. */
    public enum State {
        /** Not started, or stopped. */
        STOPPED,
        /** Opening a stream. */
        CONNECTING,
        /** A stream is open and has sent its first event. */
        STREAMING,
        /** Every server answered 404 on the stream: the client polls, as a stock client. */
        POLLING,
        /** The last attempt failed; waiting before the next one. */
        BACKING_OFF
    }

    private static final Log log = LogFactory.getLog(HeurekaStreamWatcher.class);
    private static final Pattern APPS_HASHCODE = Pattern.compile("\"apps__hashcode\"\\s*:\\s*\"([^\"]*)\"");
    /** Characters of a data line kept (the hashcode is near its start; a snapshot's registry is not kept). */
    private static final int LINE_KEEP = 4096;
    /** The first pause after every URL failed in a row (a survivor may refuse reads for a moment after a stop). */
    private static final long FIRST_BACKOFF_MS = 250;

    private final EurekaClientConfig clientConfig;
    private final HeurekaStreamProperties props;
    private final RegistryRefresher refresher;
    private final AtomicLong events = new AtomicLong();
    private final AtomicLong connections = new AtomicLong();
    private volatile State state = State.STOPPED;
    private volatile boolean running;
    private volatile Thread thread;
    private volatile HttpURLConnection current;
    private volatile String lastEventId;
    private volatile String streamUrl;
    /** Whether the stream being followed (or last followed) sent an event. */
    private volatile boolean gotEvent;

    HeurekaStreamWatcher(EurekaClientConfig clientConfig, HeurekaStreamProperties props, RegistryRefresher refresher) {
        this.clientConfig = clientConfig;
        this.props = props;
        this.refresher = refresher;
    }

    /** What the watcher is doing now. */
    public State state() {
        return state;
    }

    /** Events received (snapshots and deltas, every connection). */
    public long events() {
        return events.get();
    }

    /** Streams opened (answered 200). */
    public long connections() {
        return connections.get();
    }

    /** Registry refreshes the stream's events triggered. */
    public long refreshes() {
        return refresher.refreshes();
    }

    /** The stream followed now or last (without credentials), or null. */
    public String streamUrl() {
        return streamUrl;
    }

    @Override
    public synchronized void start() {
        if (running || !refresher.usable()) {
            return;
        }
        if (!clientConfig.shouldFetchRegistry()) {
            return; // eureka.client.fetch-registry=false: there is no registry to keep current
        }
        running = true;
        Thread t = new Thread(this::loop, "heureka-stream");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    @Override
    public synchronized void stop() {
        running = false;
        Thread t = thread;
        thread = null;
        HttpURLConnection c = current;
        if (c != null) {
            c.disconnect();
        }
        if (t != null) {
            t.interrupt();
        }
        refresher.close();
        state = State.STOPPED;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Started after the Eureka client's registration (EurekaAutoServiceRegistration, phase 0), stopped before it. */
    @Override
    public int getPhase() {
        return DEFAULT_PHASE - 1;
    }

    private void loop() {
        long backoffMs = FIRST_BACKOFF_MS;
        int next = 0;
        int notFound = 0;
        int failures = 0;
        while (running) {
            List<String> urls = serviceUrls();
            if (urls.isEmpty()) {
                log.warn("the Eureka client has no service URL: the Heureka stream is not followed");
                state = State.POLLING;
                sleep(props.getFallbackRetry().toMillis());
                continue;
            }
            String base = urls.get(Math.floorMod(next, urls.size()));
            Outcome outcome;
            gotEvent = false;
            long openedAt = System.nanoTime();
            try {
                outcome = follow(base);
            } catch (IOException | RuntimeException e) {
                if (!running) {
                    break;
                }
                log.debug("the Heureka stream at " + redact(base) + " failed", e);
                outcome = Outcome.FAILED;
            }
            if (!running) {
                break;
            }
            if (outcome == Outcome.FAILED && gotEvent) {
                outcome = Outcome.STREAMED; // it worked, then ended (node gone, idle): reopen at once
            }
            switch (outcome) {
                case STREAMED -> {
                    // It worked, then ended: most often its node is going away (a stop, a restart), so reopen
                    // at once on the next URL (its first event is then a snapshot; ids are per node).
                    backoffMs = FIRST_BACKOFF_MS;
                    notFound = 0;
                    failures = 0;
                    next++;
                    long lasted = (System.nanoTime() - openedAt) / 1_000_000;
                    if (lasted < 1000) {
                        sleep(1000 - lasted); // a server that closes every stream at once is not hammered
                    }
                    continue;
                }
                case NOT_FOUND -> {
                    notFound++;
                    next++;
                    if (notFound >= urls.size()) {
                        if (state != State.POLLING) {
                            log.info("no Heureka change stream at " + redact(urls.toString())
                                    + " (404): the Eureka client polls every "
                                    + clientConfig.getRegistryFetchIntervalSeconds() + " s; asking again in "
                                    + props.getFallbackRetry());
                        }
                        state = State.POLLING;
                        notFound = 0;
                        sleep(props.getFallbackRetry().toMillis());
                    }
                    continue;
                }
                default -> {
                    // The next URL at once; a pause once every URL failed in a row.
                    next++;
                    failures++;
                    if (failures % urls.size() == 0) {
                        state = State.BACKING_OFF;
                        sleep(backoffMs);
                        backoffMs = Math.min(backoffMs * 2, Math.max(FIRST_BACKOFF_MS, props.getMaxBackoff().toMillis()));
                    }
                }
            }
        }
        state = State.STOPPED;
    }

    private enum Outcome { STREAMED, NOT_FOUND, FAILED }

    /** Opens the stream at base and reads it until it ends. */
    private Outcome follow(String base) throws IOException {
        URI uri = URI.create(base.endsWith("/") ? base + "stream" : base + "/stream");
        String userInfo = uri.getRawUserInfo();
        URI plain = stripUserInfo(uri);
        if (state != State.POLLING) {
            state = State.CONNECTING;
        }
        HttpURLConnection c = (HttpURLConnection) plain.toURL().openConnection();
        current = c;
        try {
            c.setConnectTimeout((int) props.getConnectTimeout().toMillis());
            c.setReadTimeout((int) props.getIdleTimeout().toMillis());
            c.setUseCaches(false);
            c.setRequestProperty("Accept", "text/event-stream");
            c.setRequestProperty("Cache-Control", "no-cache");
            if (lastEventId != null) {
                c.setRequestProperty("Last-Event-ID", lastEventId);
            }
            if (userInfo != null) {
                String decoded = URLDecoder.decode(userInfo.replace("+", "%2B"), StandardCharsets.UTF_8);
                c.setRequestProperty("Authorization", "Basic "
                        + Base64.getEncoder().encodeToString(decoded.getBytes(StandardCharsets.UTF_8)));
            }
            int code = c.getResponseCode();
            if (code == 404) {
                drain(c.getErrorStream());
                return Outcome.NOT_FOUND;
            }
            if (code != 200) {
                drain(c.getErrorStream());
                log.debug("the Heureka stream at " + plain + " answered " + code);
                return Outcome.FAILED;
            }
            String type = c.getContentType();
            if (type == null || !type.startsWith("text/event-stream")) {
                // A server that answers anything to any path: not a stream.
                drain(c.getInputStream());
                return Outcome.NOT_FOUND;
            }
            connections.incrementAndGet();
            streamUrl = plain.toString();
            read(c.getInputStream(), plain);
            return gotEvent ? Outcome.STREAMED : Outcome.FAILED;
        } finally {
            current = null;
            c.disconnect();
        }
    }

    /** Reads events until the stream ends; dispatches each one. */
    private void read(InputStream in, URI from) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 16 * 1024);
        StringBuilder line = new StringBuilder();
        String id = null;
        String hash = null;
        boolean data = false;
        boolean first = true;
        while (running) {
            if (!readLine(r, line)) {
                return;
            }
            if (line.length() == 0) { // end of an event
                if (data) {
                    if (id != null) {
                        lastEventId = id;
                    }
                    events.incrementAndGet();
                    gotEvent = true;
                    if (first) {
                        first = false;
                        state = State.STREAMING;
                        log.info("following the Heureka change stream at " + from);
                    }
                    refresher.request(hash);
                }
                id = null;
                hash = null;
                data = false;
                continue;
            }
            if (line.charAt(0) == ':') {
                continue; // keep-alive
            }
            String s = line.toString();
            if (s.startsWith("id:")) {
                id = value(s, 3);
            } else if (s.startsWith("data:")) {
                data = true;
                if (hash == null) {
                    Matcher m = APPS_HASHCODE.matcher(s);
                    if (m.find()) {
                        hash = m.group(1);
                    }
                }
            }
        }
    }

    /** One line into sb (its first LINE_KEEP characters); false at the end of the stream. */
    private static boolean readLine(BufferedReader r, StringBuilder sb) throws IOException {
        sb.setLength(0);
        int ch;
        boolean any = false;
        while ((ch = r.read()) != -1) {
            any = true;
            if (ch == '\n') {
                int n = sb.length();
                if (n > 0 && sb.charAt(n - 1) == '\r') {
                    sb.setLength(n - 1);
                }
                return true;
            }
            if (sb.length() < LINE_KEEP) {
                sb.append((char) ch);
            }
        }
        return any && sb.length() > 0;
    }

    private static String value(String line, int from) {
        String v = line.substring(from);
        return v.startsWith(" ") ? v.substring(1) : v;
    }

    /** The client's service URLs: its region's zones in the configured order, then defaultZone; no duplicates. */
    private List<String> serviceUrls() {
        Set<String> urls = new LinkedHashSet<>();
        String[] zones = clientConfig.getAvailabilityZones(clientConfig.getRegion());
        List<String> order = new ArrayList<>();
        if (zones != null) {
            order.addAll(List.of(zones));
        }
        order.add("defaultZone");
        for (String zone : order) {
            List<String> u = clientConfig.getEurekaServerServiceUrls(zone);
            if (u != null) {
                for (String s : u) {
                    if (s != null && !s.isBlank()) {
                        urls.add(s.trim());
                    }
                }
            }
        }
        return new ArrayList<>(urls);
    }

    private static URI stripUserInfo(URI u) {
        try {
            return new URI(u.getScheme(), null, u.getHost(), u.getPort(), u.getPath(), u.getQuery(), null);
        } catch (Exception e) {
            return u;
        }
    }

    private static String redact(String s) {
        return s.replaceAll("//[^/@\\s,\\]]*@", "//");
    }

    private static void drain(InputStream in) {
        if (in == null) {
            return;
        }
        try (in) {
            in.readAllBytes();
        } catch (IOException ignored) {
            // the connection goes anyway
        }
    }

    private void sleep(long ms) {
        try {
            Thread.sleep(Math.max(1, ms));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            running = false;
        }
    }
}
