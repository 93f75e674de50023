/**
 * The naming services and load balancers verbus ships, one line each: import this module (the
 * cluster client does) and {@link NAMING_SCHEMES} and {@link BALANCERS} know them all. A new one
 * is one file (`naming_<scheme>.ts` exporting its factory, or `lb_<name>.ts`) plus one line here.
 * @module
 */
import { NAMING_SCHEMES } from "./naming.ts";
import { BALANCERS } from "./balancer.ts";
import { consulNamingService } from "./naming_consul.ts";
import { dnsNamingService, httpNamingService, srvNamingService } from "./naming_dns.ts";
import { fileNamingService } from "./naming_file.ts";
import { listNamingService } from "./naming_list.ts";

NAMING_SCHEMES.set("list", listNamingService);
NAMING_SCHEMES.set("file", fileNamingService);
NAMING_SCHEMES.set("dns", dnsNamingService);
NAMING_SCHEMES.set("dns+srv", srvNamingService);
NAMING_SCHEMES.set("http", httpNamingService);
NAMING_SCHEMES.set("consul", consulNamingService);
import { etcdNaming } from "./naming_etcd.ts";

NAMING_SCHEMES.set("etcd", etcdNaming);

export { BALANCERS, NAMING_SCHEMES };
