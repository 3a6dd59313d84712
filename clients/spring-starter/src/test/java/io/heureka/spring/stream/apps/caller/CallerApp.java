package io.heureka.spring.stream.apps.caller;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.client.loadbalancer.LoadBalanced;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.web.client.RestClient;

/**
 * A plain Spring Cloud app that calls other services by name through a load-balanced RestClient. Nothing in it
 * knows of the starter: the starter is on its classpath, as a dependency would put it.
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
     * A plain builder for everything else: the Eureka client's RestClient transport takes the context's
     * RestClient.Builder, and must not send its registry requests through the load balancer.
     */
    @Bean
    @Primary
    RestClient.Builder restClientBuilder() {
        return RestClient.builder();
    }
}
