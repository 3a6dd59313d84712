package io.heureka.spring.stream;

import com.netflix.discovery.DiscoveryClient;
import com.netflix.discovery.EurekaClient;
import com.netflix.discovery.shared.Applications;
import java.lang.reflect.Method;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.aop.framework.Advised;

/**
 * Runs the Eureka client's own registry refresh (what its 30 s timer runs: a delta fetch, applied and checked
 * against the server's hashcode, a full fetch when they differ, then the client's cache-refreshed event) now,
 * on one thread of its own. Requests that arrive while a refresh runs make one more refresh, not one each.
 *
 * <p>After a refresh the registry's hashcode is compared with the one the stream's event announced; when they
 * differ (the node the client fetches from has not caught up with the node the stream comes from), the refresh is
 * repeated after 50 ms, 100 ms, … up to 1.6 s, then left to the next event or the client's own timer.
 */
final class RegistryRefresher implements AutoCloseable {

    private static final Log log = LogFactory.getLog(RegistryRefresher.class);
    private static final long[] RETRY_MS = {50, 100, 200, 400, 800, 1600};

    private final Supplier<EurekaClient> client;
    private final Method refreshRegistry;
    private final ScheduledExecutorService executor;
    private final AtomicBoolean pending = new AtomicBoolean();
    private final AtomicLong refreshes = new AtomicLong();
    private volatile String expectedHash;
    private volatile boolean closed;

    RegistryRefresher(Supplier<EurekaClient> client) {
        this.client = client;
        this.refreshRegistry = refreshMethod();
        this.executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "heureka-registry-refresh");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * The package-private {@code DiscoveryClient.refreshRegistry()} (the body of the client's refresh timer; it
     * catches and logs its own failures). Null when this eureka-client has none: then the starter only logs.
     */
    private static Method refreshMethod() {
        try {
            Method m = DiscoveryClient.class.getDeclaredMethod("refreshRegistry");
            m.setAccessible(true);
            return m;
        } catch (ReflectiveOperationException | RuntimeException e) {
            log.warn("this eureka-client has no DiscoveryClient.refreshRegistry(): the Heureka stream cannot trigger "
                    + "refreshes, the client polls as usual (" + e + ")");
            return null;
        }
    }

    boolean usable() {
        return refreshRegistry != null;
    }

    /** How many refreshes this refresher has run. */
    long refreshes() {
        return refreshes.get();
    }

    /**
     * Asks for a refresh; appsHashCode is the registry's hashcode after the event that asked (null: unknown, no
     * check).
     */
    void request(String appsHashCode) {
        expectedHash = appsHashCode;
        if (!closed && pending.compareAndSet(false, true)) {
            executor.execute(() -> run(0));
        }
    }

    private void run(int attempt) {
        pending.set(false);
        if (closed) {
            return;
        }
        DiscoveryClient target = target();
        if (target == null) {
            return;
        }
        try {
            refreshRegistry.invoke(target);
            refreshes.incrementAndGet();
        } catch (ReflectiveOperationException | RuntimeException e) {
            log.warn("refreshing the Eureka client's registry failed", e);
            return;
        }
        String want = expectedHash;
        if (want == null || attempt >= RETRY_MS.length || pending.get()) {
            return;
        }
        Applications apps = target.getApplications();
        String have = apps == null ? null : apps.getAppsHashCode();
        if (!want.equals(have) && pending.compareAndSet(false, true)) {
            if (log.isDebugEnabled()) {
                log.debug("registry hashcode " + have + " after refresh, the stream announced " + want + ": again in "
                        + RETRY_MS[attempt] + " ms");
            }
            executor.schedule(() -> run(attempt + 1), RETRY_MS[attempt], TimeUnit.MILLISECONDS);
        }
    }

    /** The DiscoveryClient behind Spring's (possibly lazy, refresh-scoped) EurekaClient bean. */
    private DiscoveryClient target() {
        Object c;
        try {
            c = client.get();
            while (c instanceof Advised advised) {
                Object inner = advised.getTargetSource().getTarget();
                if (inner == null || inner == c) {
                    break;
                }
                c = inner;
            }
        } catch (Exception e) {
            log.debug("no Eureka client to refresh yet", e);
            return null;
        }
        return c instanceof DiscoveryClient dc ? dc : null;
    }

    @Override
    public void close() {
        closed = true;
        executor.shutdownNow();
    }
}
