package io.heureka.reference;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.netflix.eureka.server.EnableEurekaServer;

/**
 * Spring Cloud Netflix Eureka Server with nothing added: the server Heureka's
 * users run today, started by the Go tests and the benchmark as the reference.
 */
@SpringBootApplication
@EnableEurekaServer
public class ReferenceServer {
    public static void main(String[] args) {
        SpringApplication.run(ReferenceServer.class, args);
    }
}
