package io.heureka.clients.netflix;

import com.netflix.appinfo.ApplicationInfoManager;
import com.netflix.appinfo.InstanceInfo;
import com.netflix.appinfo.MyDataCenterInstanceConfig;
import com.netflix.appinfo.providers.EurekaConfigBasedInstanceInfoProvider;
import com.netflix.config.ConfigurationManager;
import com.netflix.discovery.DefaultEurekaClientConfig;
import com.netflix.discovery.DiscoveryClient;
import com.netflix.discovery.Jersey3DiscoveryClientOptionalArgs;
import com.netflix.discovery.shared.Application;
import com.netflix.discovery.shared.transport.jersey3.Jersey3TransportClientFactories;
import jakarta.ws.rs.client.ClientRequestFilter;
import java.util.List;
import org.apache.commons.configuration.AbstractConfiguration;

/**
 * A Netflix DiscoveryClient set up the way a user without Spring sets it up:
 * Archaius properties (what eureka-client.properties would hold, here under
 * a namespace of its own per client so several live in one JVM),
 * MyDataCenterInstanceConfig, ApplicationInfoManager, and the Jersey 3
 * transport. Intervals are 1 s so a test sees renewals and fetches quickly.
 */
final class NetflixClient implements AutoCloseable {

    enum Format { JSON, COMPACT, XML }

    final String app;
    final String id;
    final Recorder recorder;
    final ApplicationInfoManager infoManager;
    final DiscoveryClient client;

    /**
     * Starts a client that registers app/id with serviceUrl (a Eureka base
     * URL ending in '/', credentials in it if any) and fetches the registry.
     * The instance starts as STARTING; call {@link #up()} to register it UP.
     */
    NetflixClient(String namespace, String serviceUrl, String app, String id, Format format) {
        this.app = app;
        this.id = id;
        AbstractConfiguration c = ConfigurationManager.getConfigInstance();
        String p = namespace + ".";
        // The client (DefaultEurekaClientConfig).
        c.setProperty(p + "serviceUrl.default", serviceUrl);
        c.setProperty(p + "shouldUseDns", "false");
        c.setProperty(p + "registration.enabled", "true");
        c.setProperty(p + "shouldFetchRegistry", "true");
        c.setProperty(p + "client.refresh.interval", "1");
        c.setProperty(p + "appinfo.replicate.interval", "1");
        c.setProperty(p + "appinfo.initial.replicate.time", "1");
        c.setProperty(p + "eurekaServer.connectTimeout", "2");
        c.setProperty(p + "eurekaServer.readTimeout", "5");
        if (format == Format.COMPACT) {
            c.setProperty(p + "clientDataAccept", "compact");
        }
        // The instance (MyDataCenterInstanceConfig).
        c.setProperty(p + "name", app);
        c.setProperty(p + "instanceId", id);
        c.setProperty(p + "port", "18080");
        c.setProperty(p + "vipAddress", app.toLowerCase() + ".vip");
        c.setProperty(p + "lease.renewalInterval", "1");
        c.setProperty(p + "lease.duration", "10");
        c.setProperty(p + "metadata.format", format.name());

        MyDataCenterInstanceConfig instanceConfig = new MyDataCenterInstanceConfig(namespace);
        InstanceInfo info = new EurekaConfigBasedInstanceInfoProvider(instanceConfig).get();
        this.infoManager = new ApplicationInfoManager(instanceConfig, info);
        this.recorder = new Recorder(format == Format.XML);
        Jersey3DiscoveryClientOptionalArgs args = new Jersey3DiscoveryClientOptionalArgs();
        args.setAdditionalFilters(List.<ClientRequestFilter>of(recorder));
        this.client = new DiscoveryClient(infoManager, new DefaultEurekaClientConfig(namespace),
                Jersey3TransportClientFactories.getInstance(), args);
    }

    /** Marks the instance UP, which makes the client register it at once (on-demand update). */
    void up() {
        infoManager.setInstanceStatus(InstanceInfo.InstanceStatus.UP);
    }

    /** The instance id as this client's local registry holds it, or null. */
    InstanceInfo seen(String instanceId) {
        Application a = client.getApplication(app);
        return a == null ? null : a.getByInstanceId(instanceId);
    }

    @Override
    public void close() {
        client.shutdown();
    }
}
