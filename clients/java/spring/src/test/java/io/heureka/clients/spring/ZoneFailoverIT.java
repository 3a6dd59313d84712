package io.heureka.clients.spring;

import static io.heureka.clients.spring.SpringCloudClientTest.common;
import static io.heureka.clients.spring.SpringCloudClientTest.env;
import static io.heureka.clients.spring.SpringCloudClientTest.eventually;
import static io.heureka.clients.spring.SpringCloudClientTest.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.heureka.clients.spring.caller.CallerApp;
import io.heureka.clients.spring.greeter.GreeterApp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.client.RestClient;

/**
 * Two Heureka datacenters, regions dc1 (HEUREKA_DC1_URL) and dc2 (HEUREKA_DC2_URL), each the
 * other's remote region. "greeter" has instances registered in each; "caller" lives in dc1 and is
 * configured as docs/federation.md's example says: its Eureka client in region dc1 with
 * fetch-remote-regions-registry=dc2, its zone dc1, and Spring Cloud LoadBalancer's zone preference.
 * Its load-balanced calls by service name stay in dc1 while dc1 has a greeter, land on dc2's
 * greeter once dc1's are cancelled, and come back to dc1 when a dc1 greeter registers again.
 *
 * <p>dc1's greeters carry eureka.instance.metadata-map.zone=dc1; dc2's greeter sets no zone, so
 * the zone the caller sees on it ("dc2") is the one Heureka gives a remote instance without one.
 *
 * <p>The Go driver (TestSpringZoneFailover, clients/java/zones_test.go) runs this class by name;
 * its name is outside surefire's default includes, so the module's other runs neither run nor skip
 * it.
 */
class ZoneFailoverIT {

    /** At least this many calls back each "every call lands in …" check. */
    private static final int CALLS = 20;

    private final List<ConfigurableApplicationContext> apps = new ArrayList<>();

    @AfterEach
    void closeApps() {
        for (int i = apps.size() - 1; i >= 0; i--) {
            apps.get(i).close();
        }
    }

    /** A greeter registered with one datacenter's Heureka; zone null: none configured. */
    private ConfigurableApplicationContext greeter(String url, String zone, String id) {
        Map<String, Object> p = common(url);
        p.put("spring.application.name", "greeter");
        p.put("eureka.instance.instance-id", id);
        p.put("eureka.client.fetch-registry", "false");
        if (zone != null) {
            p.put("eureka.instance.metadata-map.zone", zone);
        }
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(GreeterApp.class).properties(p).run();
        apps.add(ctx);
        return ctx;
    }

    /** The caller in dc1, as docs/federation.md configures a service that prefers its datacenter. */
    private ConfigurableApplicationContext caller(String dc1) {
        Map<String, Object> p = common(dc1);
        p.remove("eureka.client.service-url.defaultZone");
        p.put("spring.application.name", "caller");
        p.put("eureka.client.register-with-eureka", "false");
        p.put("eureka.client.region", "dc1");
        p.put("eureka.client.availability-zones.dc1", "dc1");
        p.put("eureka.client.availability-zones.dc2", "dc2");
        p.put("eureka.client.service-url.dc1", dc1);
        p.put("eureka.client.fetch-remote-regions-registry", "dc2");
        p.put("eureka.instance.metadata-map.zone", "dc1");
        p.put("spring.cloud.loadbalancer.configurations", "zone-preference");
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(CallerApp.class).properties(p).run();
        apps.add(ctx);
        return ctx;
    }

    private void close(ConfigurableApplicationContext ctx) {
        ctx.close();
        apps.remove(ctx);
    }

    @Test
    void prefersItsZoneFailsOverToDc2AndComesBack() {
        String dc1 = env("HEUREKA_DC1_URL");
        String dc2 = env("HEUREKA_DC2_URL");

        ConfigurableApplicationContext a1 = greeter(dc1, "dc1", "greeter-dc1-1");
        ConfigurableApplicationContext a2 = greeter(dc1, "dc1", "greeter-dc1-2");
        greeter(dc2, null, "greeter-dc2-1");
        ConfigurableApplicationContext b = caller(dc1);
        DiscoveryClient discovery = b.getBean(DiscoveryClient.class);
        RestClient lb = b.getBean("loadBalancedRestClientBuilder", RestClient.Builder.class).build();

        // ---- the caller sees both datacenters, each instance with its zone.
        Set<String> all = Set.of("greeter-dc1-1", "greeter-dc1-2", "greeter-dc2-1");
        eventually(() -> "the caller lists dc1's and dc2's greeters: " + ids(discovery.getInstances("greeter")),
                () -> ids(discovery.getInstances("greeter")).equals(all));
        Map<String, String> zones = new HashMap<>();
        for (ServiceInstance si : discovery.getInstances("greeter")) {
            zones.put(si.getInstanceId(), si.getMetadata().get("zone"));
        }
        assertEquals(Map.of("greeter-dc1-1", "dc1", "greeter-dc1-2", "dc1", "greeter-dc2-1", "dc2"), zones);

        // ---- zone preference: every call stays in dc1, on both of its greeters.
        callsLandOn(lb, Set.of("greeter-dc1-1", "greeter-dc1-2"));

        // ---- dc1's greeters are cancelled (their shutdown deregisters them): calls fail over to dc2.
        close(a1);
        close(a2);
        eventually(() -> "the caller lists dc2's greeter only: " + ids(discovery.getInstances("greeter")),
                () -> ids(discovery.getInstances("greeter")).equals(Set.of("greeter-dc2-1")));
        callsLandOn(lb, Set.of("greeter-dc2-1"));

        // ---- a dc1 greeter registers again: calls come back to dc1.
        greeter(dc1, "dc1", "greeter-dc1-3");
        eventually(() -> "the caller lists the new dc1 greeter: " + ids(discovery.getInstances("greeter")),
                () -> ids(discovery.getInstances("greeter")).equals(Set.of("greeter-dc1-3", "greeter-dc2-1")));
        callsLandOn(lb, Set.of("greeter-dc1-3"));
    }

    /**
     * Calls greeter by service name until each of want has answered and at least CALLS calls were
     * made; every answer must come from want.
     */
    private static void callsLandOn(RestClient lb, Set<String> want) {
        Set<String> answered = new HashSet<>();
        int[] calls = {0};
        eventually(() -> calls[0] + " calls reached " + answered + " of " + want, () -> {
            String body = lb.get().uri("http://greeter/hello").retrieve().body(String.class);
            String id = body.replace("hello from ", "");
            calls[0]++;
            assertTrue(want.contains(id), "call " + calls[0] + " landed on " + id + ", not on one of " + want);
            answered.add(id);
            return calls[0] >= CALLS && answered.equals(want);
        });
    }
}
