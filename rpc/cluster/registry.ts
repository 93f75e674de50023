/**
 * The naming services and load balancers verbus ships, one line each: import this module (the
 * cluster client does) and {@link NAMING_SCHEMES} and {@link BALANCERS} know them all. A new one
 * is one file (`naming_<scheme>.ts` exporting its factory, or `lb_<name>.ts`) plus one line here.
 * @module
 */
import { NAMING_SCHEMES } from "./naming.ts";
import { BALANCERS } from "./balancer.ts";
import { etcdNaming } from "./naming_etcd.ts";

NAMING_SCHEMES.set("etcd", etcdNaming);

export { BALANCERS, NAMING_SCHEMES };
