/**
 * The naming services and load balancers verbus ships, one line each: import this module (the
 * cluster client does) and {@link NAMING_SCHEMES} and {@link BALANCERS} know them all. A new one
 * is one file (`naming_<scheme>.ts` exporting its factory, or `lb_<name>.ts`) plus one line here.
 * @module
 */
import { NAMING_SCHEMES } from "./naming.ts";
import { BALANCERS } from "./balancer.ts";
import { consistentKetama, consistentMd5, consistentMurmur } from "./lb_consistent_hashing.ts";
import { p2c } from "./lb_p2c.ts";
import { pickFirst } from "./lb_pick_first.ts";
import { randomized } from "./lb_random.ts";
import { roundRobin } from "./lb_rr.ts";
import { weightedRandom } from "./lb_wr.ts";
import { weightedRoundRobin } from "./lb_wrr.ts";
import { consulNamingService } from "./naming_consul.ts";
import { dnsNamingService, httpNamingService, srvNamingService } from "./naming_dns.ts";
import { fileNamingService } from "./naming_file.ts";
import { listNamingService } from "./naming_list.ts";
import { etcdNaming } from "./naming_etcd.ts";

NAMING_SCHEMES.set("list", listNamingService);
NAMING_SCHEMES.set("file", fileNamingService);
NAMING_SCHEMES.set("dns", dnsNamingService);
NAMING_SCHEMES.set("dns+srv", srvNamingService);
NAMING_SCHEMES.set("http", httpNamingService);
NAMING_SCHEMES.set("consul", consulNamingService);
NAMING_SCHEMES.set("etcd", etcdNaming);

BALANCERS.set("rr", roundRobin);
BALANCERS.set("random", randomized);
BALANCERS.set("wrr", weightedRoundRobin);
BALANCERS.set("wr", weightedRandom);
BALANCERS.set("p2c", p2c);
BALANCERS.set("c_murmurhash", consistentMurmur);
BALANCERS.set("c_md5", consistentMd5);
BALANCERS.set("c_ketama", consistentKetama);
BALANCERS.set("pick_first", pickFirst);

export { BALANCERS, NAMING_SCHEMES };
