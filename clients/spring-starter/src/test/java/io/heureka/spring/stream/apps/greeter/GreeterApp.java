package io.heureka.spring.stream.apps.greeter;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** A service that registers with Eureka and answers GET /hello with its instance id. */
@SpringBootApplication
@RestController
public class GreeterApp {

    @Value("${eureka.instance.instance-id}")
    private String instanceId;

    @GetMapping("/hello")
    public String hello() {
        return "hello from " + instanceId;
    }
}
