package io.heureka.spring.stream;

import com.netflix.discovery.EurekaClient;
import com.netflix.discovery.EurekaClientConfig;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.loadbalancer.cache.LoadBalancerCacheManager;
import org.springframework.cloud.netflix.eureka.EurekaClientAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Keeps a Spring Cloud Netflix Eureka client's registry current from Heureka's change stream, and Spring Cloud
 * LoadBalancer's instance lists current with that registry. Nothing to write in the app: the dependency is enough.
 * Registration, renewal and the client's own polling are the stock client's, unchanged; against a server without
 * the stream (404) only the polling remains. {@code heureka.stream.enabled=false} turns the stream off.
 */
@AutoConfiguration(after = EurekaClientAutoConfiguration.class)
@ConditionalOnClass(EurekaClient.class)
@ConditionalOnProperty(value = "eureka.client.enabled", matchIfMissing = true)
@EnableConfigurationProperties(HeurekaStreamProperties.class)
public class HeurekaStreamAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean({EurekaClient.class, EurekaClientConfig.class})
    @ConditionalOnProperty(value = "heureka.stream.enabled", matchIfMissing = true)
    HeurekaStreamWatcher heurekaStreamWatcher(ObjectProvider<EurekaClient> client, EurekaClientConfig clientConfig,
            HeurekaStreamProperties props) {
        return new HeurekaStreamWatcher(clientConfig, props, new RegistryRefresher(client::getObject));
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(LoadBalancerCacheManager.class)
    @ConditionalOnProperty(value = "heureka.stream.clear-load-balancer-cache", matchIfMissing = true)
    static class LoadBalancerCacheClearing {

        @Bean
        LoadBalancerCacheClearer heurekaLoadBalancerCacheClearer(ListableBeanFactory beans) {
            return new LoadBalancerCacheClearer(beans);
        }
    }
}
