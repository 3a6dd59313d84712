package io.heureka.spring.stream;

import java.util.Collection;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.cache.Cache;
import org.springframework.cloud.client.discovery.event.HeartbeatEvent;
import org.springframework.cloud.loadbalancer.cache.LoadBalancerCacheManager;
import org.springframework.context.ApplicationListener;

/**
 * Clears Spring Cloud LoadBalancer's cached instance lists (every cache of every {@link LoadBalancerCacheManager})
 * on each {@link HeartbeatEvent}, which Spring Cloud Netflix's Eureka client publishes after every registry
 * refresh, on the refreshing thread, once the new registry is in place. So the lists the load balancer picks from
 * are never older than the Eureka client's registry, whether a stream event or the client's own timer refreshed it
 * ({@code spring.cloud.loadbalancer.cache.ttl}, 35 s by default, stays the bound when no refresh happens).
 *
 * <p>The cache managers are looked up by type in the bean factory: Spring Cloud declares them with
 * {@code autowireCandidate=false} (so that they do not stand in for the app's own CacheManager), which hides them
 * from injection and from ObjectProvider.
 *
 * <p>A lookup that read the registry just before the refresh may write its list into the cache just after the
 * clearing; a second clearing half a second later removes such a list.
 */
final class LoadBalancerCacheClearer implements ApplicationListener<HeartbeatEvent> {

    private static final Executor LATER = CompletableFuture.delayedExecutor(500, TimeUnit.MILLISECONDS);

    private final ListableBeanFactory beans;
    private volatile Collection<LoadBalancerCacheManager> managers;

    LoadBalancerCacheClearer(ListableBeanFactory beans) {
        this.beans = beans;
    }

    @Override
    public void onApplicationEvent(HeartbeatEvent event) {
        clear();
        LATER.execute(this::clear);
    }

    void clear() {
        Collection<LoadBalancerCacheManager> ms = managers;
        if (ms == null) {
            ms = beans.getBeansOfType(LoadBalancerCacheManager.class, false, true).values();
            if (!ms.isEmpty()) {
                managers = ms; // kept once found; looked up again while there is none yet
            }
        }
        for (LoadBalancerCacheManager m : ms) {
            for (String name : m.getCacheNames()) {
                Cache c = m.getCache(name);
                if (c != null) {
                    c.clear();
                }
            }
        }
    }
}
