package io.heureka.spring.stream;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code heureka.stream.*}: how the starter follows the change stream. The defaults fit every app; the Eureka
 * client's own settings ({@code eureka.client.*}) are read as they are.
 */
@ConfigurationProperties("heureka.stream")
public class HeurekaStreamProperties {

    /** Follow the change stream. With false the app is a stock Eureka client (the LoadBalancer clearing stays). */
    private boolean enabled = true;

    /** A stream that sends nothing (not even a keep-alive, every 15 s by default) for this long is reopened. */
    private Duration idleTimeout = Duration.ofSeconds(45);

    /** Connect timeout of the stream's connection. */
    private Duration connectTimeout = Duration.ofSeconds(5);

    /** The longest pause before another round of URLs when every one failed in a row (it doubles from 250 ms). */
    private Duration maxBackoff = Duration.ofSeconds(30);

    /**
     * When every server answers 404 on the stream (a plain Eureka server), the app polls as a stock client does
     * and asks again after this long.
     */
    private Duration fallbackRetry = Duration.ofMinutes(5);

    /** Clear Spring Cloud LoadBalancer's cached instance lists whenever the Eureka client's registry refreshes. */
    private boolean clearLoadBalancerCache = true;

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public Duration getIdleTimeout() {
        return idleTimeout;
    }

    public void setIdleTimeout(Duration idleTimeout) {
        this.idleTimeout = idleTimeout;
    }

    public Duration getConnectTimeout() {
        return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
        this.connectTimeout = connectTimeout;
    }

    public Duration getMaxBackoff() {
        return maxBackoff;
    }

    public void setMaxBackoff(Duration maxBackoff) {
        this.maxBackoff = maxBackoff;
    }

    public Duration getFallbackRetry() {
        return fallbackRetry;
    }

    public void setFallbackRetry(Duration fallbackRetry) {
        this.fallbackRetry = fallbackRetry;
    }

    public boolean isClearLoadBalancerCache() {
        return clearLoadBalancerCache;
    }

    public void setClearLoadBalancerCache(boolean clearLoadBalancerCache) {
        this.clearLoadBalancerCache = clearLoadBalancerCache;
    }
}
