//! Kernel receive timestamps (Linux `SO_TIMESTAMPNS`): when a datagram reached the socket, on
//! the system clock, read from the `SCM_TIMESTAMPNS` control message of `recvmsg(2)`.
//!
//! A receive timestamp read in user space is late by however long the task took to wake up
//! (tens of microseconds, more on a loaded machine), and that lateness goes straight into every
//! client's offset. The kernel's timestamp is not. The server takes the time elapsed since the
//! kernel's stamp (both on the system clock) off its own clock's reading, so it works for the
//! virtual clock too. Where the option is refused, [`recv_from`] returns no stamp and the caller
//! falls back to reading the clock.
//!
//! [`system_now_ns`] reads the system clock in the stamps' unit (ns since the Unix epoch).

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// The system clock as ns since the Unix epoch.
pub fn system_now_ns() -> i128 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// Asks the kernel to stamp every datagram `socket` receives.
pub fn enable(socket: &UdpSocket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor, a pointer to a c_int and its size.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Receives one datagram: its length, its sender, and the kernel's receive timestamp in ns since
/// the Unix epoch (if it sent one).
pub async fn recv_from(
    socket: &UdpSocket,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr, Option<i128>)> {
    loop {
        socket.readable().await?;
        match socket.try_io(Interest::READABLE, || recvmsg(socket.as_raw_fd(), buf)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

/// Receives one datagram from whichever of two sockets has one first, as [`recv_from`] does
/// (a node or an asker with a socket per address family).
pub async fn recv_from_either(
    a: &UdpSocket,
    b: &UdpSocket,
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr, Option<i128>)> {
    loop {
        let ready = tokio::select! {
            r = a.readable() => { r?; a }
            r = b.readable() => { r?; b }
        };
        match ready.try_io(Interest::READABLE, || recvmsg(ready.as_raw_fd(), buf)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

fn recvmsg(fd: i32, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Option<i128>)> {
    // SAFETY: every pointer handed to recvmsg points into a live local of the stated size; the
    // control messages are walked with the CMSG_* macros within msg_controllen, and the data
    // read unaligned.
    unsafe {
        let mut addr: libc::sockaddr_storage = zeroed();
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut control = [0u64; 16];
        let mut msg: libc::msghdr = zeroed();
        msg.msg_name = &mut addr as *mut libc::sockaddr_storage as *mut libc::c_void;
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 16]>() as _;
        let n = libc::recvmsg(fd, &mut msg, 0);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec);
                stamp = Some(ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        let from = match addr.ss_family as libc::c_int {
            libc::AF_INET => {
                let a = &*(&addr as *const libc::sockaddr_storage as *const libc::sockaddr_in);
                SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                ))
            }
            libc::AF_INET6 => {
                let a = &*(&addr as *const libc::sockaddr_storage as *const libc::sockaddr_in6);
                SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                ))
            }
            f => {
                return Err(io::Error::other(format!(
                    "a datagram from address family {f}"
                )))
            }
        };
        Ok((n as usize, from, stamp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_kernel_stamps_a_datagram_before_we_read_it() {
        let rx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        enable(&rx).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let before = system_now_ns();
        tx.send_to(b"hello", rx.local_addr().unwrap())
            .await
            .unwrap();
        let mut buf = [0u8; 64];
        let (n, from, stamp) = recv_from(&rx, &mut buf).await.unwrap();
        let after = system_now_ns();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(from, tx.local_addr().unwrap());
        let stamp = stamp.expect("SO_TIMESTAMPNS gives a stamp");
        assert!(
            before <= stamp && stamp <= after,
            "{before} {stamp} {after}"
        );
    }
}
