package io.heureka.clients.spring.caller;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.client.loadbalancer.LoadBalanced;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.web.client.RestClient;

/**
 * A client of "greeter": it finds it through Spring's DiscoveryClient and
 * calls it by service name through a load-balanced RestClient.
 */
@SpringBootApplication
public class CallerApp {

    /** The builder for calls by service name ("http://greeter/..."). */
    @Bean
    @LoadBalanced
    RestClient.Builder loadBalancedRestClientBuilder() {
        return RestClient.builder();
    }

    /**
     * A plain builder for everything else. Declaring the load-balanced one
     * replaces Boot's auto-configured builder, and the Eureka client's own
     * RestClient transport takes the context's RestClient.Builder: without
     * this primary one it sends its registry requests through the load
     * balancer, which looks up a service named after the Eureka node's host
     * ("127.0.0.1") and finds none.
     */
    @Bean
    @Primary
    RestClient.Builder restClientBuilder() {
        return RestClient.builder();
    }
}
