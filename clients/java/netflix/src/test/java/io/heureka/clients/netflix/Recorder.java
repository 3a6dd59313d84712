package io.heureka.clients.netflix;

import com.netflix.appinfo.InstanceInfo;
import jakarta.ws.rs.client.ClientRequestContext;
import jakarta.ws.rs.client.ClientRequestFilter;
import jakarta.ws.rs.client.ClientResponseContext;
import jakarta.ws.rs.client.ClientResponseFilter;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * A Jersey filter registered on the DiscoveryClient's transport (its
 * "additional filters", the client's own extension point). It records every
 * exchange, so the tests can tell which requests the client made, in which
 * format, and what it got back.
 *
 * <p>With {@code xml} it also makes the client speak XML. eureka-client 2.x's
 * Jersey 3 transport asks for JSON on every request and posts its
 * registration as JSON (its DiscoveryJerseyProvider keeps the XStream XML
 * codec "for legacy/custom clients"); this filter asks for application/xml
 * instead and sends the InstanceInfo as application/xml, so the client's own
 * XStream codec encodes what it registers and decodes every registry it
 * fetches, as the Jersey 1 clients of Eureka 1.x could be configured to.
 */
final class Recorder implements ClientRequestFilter, ClientResponseFilter {

    /** One request and its answer. */
    record Exchange(String method, String path, String requestType, String accept, String eurekaAccept,
                    String authScheme, int status, String responseType, String wwwAuthenticate) {
        @Override
        public String toString() {
            return method + " " + path + " (" + requestType + ", accept " + accept
                    + (eurekaAccept == null ? "" : ", X-Eureka-Accept " + eurekaAccept)
                    + (authScheme == null ? "" : ", " + authScheme) + ") -> " + status + " " + responseType;
        }
    }

    private final boolean xml;
    private final List<Exchange> exchanges = new ArrayList<>();

    Recorder(boolean xml) {
        this.xml = xml;
    }

    @Override
    public void filter(ClientRequestContext req) {
        if (xml) {
            req.getHeaders().putSingle(HttpHeaders.ACCEPT, MediaType.APPLICATION_XML);
            if (req.getEntity() instanceof InstanceInfo) {
                req.setEntity(req.getEntity(), req.getEntityAnnotations(), MediaType.APPLICATION_XML_TYPE);
            }
        }
    }

    @Override
    public void filter(ClientRequestContext req, ClientResponseContext resp) {
        MediaType reqType = req.getMediaType();
        MediaType respType = resp.getMediaType();
        Object auth = req.getHeaders().getFirst(HttpHeaders.AUTHORIZATION);
        Exchange e = new Exchange(req.getMethod(), req.getUri().getPath(),
                reqType == null ? null : reqType.getType() + "/" + reqType.getSubtype(),
                req.getHeaderString(HttpHeaders.ACCEPT), req.getHeaderString("X-Eureka-Accept"),
                auth == null ? null : auth.toString().split(" ")[0], resp.getStatus(),
                respType == null ? null : respType.getType() + "/" + respType.getSubtype(),
                resp.getHeaderString(HttpHeaders.WWW_AUTHENTICATE));
        synchronized (exchanges) {
            exchanges.add(e);
        }
    }

    List<Exchange> all() {
        synchronized (exchanges) {
            return List.copyOf(exchanges);
        }
    }

    List<Exchange> matching(Predicate<Exchange> p) {
        return all().stream().filter(p).toList();
    }

    long count(String method, String pathSuffix) {
        return matching(e -> e.method().equals(method) && e.path().endsWith(pathSuffix)).size();
    }

    /** Exchanges with 'GET .../apps/' (the full registry), in order. */
    List<Exchange> fullFetches() {
        return matching(e -> e.method().equals("GET") && e.path().endsWith("/apps/"));
    }

    List<Exchange> deltaFetches() {
        return matching(e -> e.method().equals("GET") && e.path().endsWith("/apps/delta"));
    }

    String dump() {
        StringBuilder sb = new StringBuilder();
        for (Exchange e : all()) {
            sb.append("\n  ").append(e);
        }
        return sb.toString();
    }

    static List<Exchange> since(List<Exchange> all, int from) {
        return new ArrayList<>(all.subList(Math.min(from, all.size()), all.size()));
    }
}
