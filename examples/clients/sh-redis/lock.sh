#!/bin/sh
# A lock client in POSIX sh over redis-cli, as a fencecheck client program
# (docs/client-protocol.md): a lease taken with SET NX PX and, in the same
# EVAL, a fencing token from INCR; released with a compare-and-delete. It
# needs only a shell, sed, date and redis-cli (fencecheck's base image has
# them), which makes it the example for --client-image: any image with
# these tools will run it. It has no library to ask: it answers held with
# its own local deadline (the grant's start plus the TTL), as a careful
# script would.

grant="if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) end return 0"
unlock="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

field() { printf '%s' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }
now_ms() { date +%s%3N; }
reply() { printf '%s\n' "$1"; }
cli() { redis-cli -h "$host" -p "$port" "$@"; }

held=""
while read -r line; do
	id=$(field "$line" id)
	case $(field "$line" type) in
	init)
		# The resource's object has endpoints and a prefix of its own (a
		# PostgreSQL resource's are the database's): read the lock
		# service's before it.
		own=$(printf '%s' "$line" | sed 's/"resource":.*//')
		endpoint=$(printf '%s' "$own" | sed -n 's/.*"endpoints":\["\([^"]*\)".*/\1/p')
		host=${endpoint%:*}
		port=${endpoint##*:}
		ttl=$(field "$own" ttl_ms)
		prefix=$(field "$own" prefix)
		reply "{\"id\":$id,\"type\":\"init_ok\",\"implements\":[\"lock\",\"held\"],\"tokens\":true,\"name\":\"sh + redis-cli lock\"}"
		;;
	acquire)
		deadline=$(( $(now_ms) + $(field "$line" timeout_ms) ))
		value="$$-$id-$(now_ms)"
		token=0
		while :; do
			start=$(now_ms)
			token=$(cli EVAL "$grant" 2 "$prefix/sh-lock" "$prefix/sh-token" "$value" "$ttl" 2>/dev/null)
			case $token in
			'' | *[!0-9]*)
				reply "{\"id\":$id,\"type\":\"error\",\"kind\":\"info\",\"message\":\"redis-cli: no answer\"}"
				continue 2
				;;
			0) ;;
			*) break ;;
			esac
			if [ "$(now_ms)" -ge "$deadline" ]; then
				reply "{\"id\":$id,\"type\":\"error\",\"kind\":\"fail\",\"message\":\"lock not acquired in time\"}"
				continue 2
			fi
			sleep 0.05
		done
		held=$value
		expires=$(( start + ttl ))
		reply "{\"id\":$id,\"type\":\"acquire_ok\",\"token\":$token,\"remaining_ms\":$(( expires - $(now_ms) ))}"
		;;
	remaining)
		left=0
		[ -n "$held" ] && left=$(( expires - $(now_ms) ))
		[ "$left" -lt 0 ] && left=0
		reply "{\"id\":$id,\"type\":\"remaining_ok\",\"remaining_ms\":$left}"
		;;
	held)
		h=false
		[ -n "$held" ] && [ "$(now_ms)" -lt "$expires" ] && h=true
		reply "{\"id\":$id,\"type\":\"held_ok\",\"held\":$h}"
		;;
	release)
		if [ -z "$held" ]; then
			reply "{\"id\":$id,\"type\":\"error\",\"kind\":\"fail\",\"message\":\"no lock held\"}"
			continue
		fi
		n=$(cli EVAL "$unlock" 1 "$prefix/sh-lock" "$held" 2>/dev/null)
		held=""
		if [ "$n" = 1 ]; then
			reply "{\"id\":$id,\"type\":\"release_ok\"}"
		else
			reply "{\"id\":$id,\"type\":\"error\",\"kind\":\"fail\",\"message\":\"the lock was no longer ours\"}"
		fi
		;;
	*)
		reply "{\"id\":$id,\"type\":\"error\",\"kind\":\"fail\",\"message\":\"unknown request\"}"
		;;
	esac
done
