!> A multibody system in natural coordinates (direction-vector method, seed 003),
!> evaluated from data.  NumPy twin: pyint/models/natural.py (NaturalModel), whose
!> builder NaturalSystem assembles bodies, joint primitives and springs into the
!> arrays read here.
!>
!> Each body has d (d + 1) coordinates (r, e_1, .., e_d), d = 2 or 3; the mass
!> matrix is constant, block-diagonal with blocks S (x) E_d.  Every linear
!> vector (a point or a body-fixed vector, or a difference of points) is
!>     u(q) = const + sum_t coef_t q(off_t + 1 : off_t + d)
!> and every holonomic constraint is  Phi_k = s_k u_k . w_k - c_k  with u_k, w_k
!> linear vectors, so Phi_q = s (w^T U + u^T W), (Phi_q v)_q v = 2 s (U v).(W v),
!> (Phi_q^T lam)_q = sum lam_k s_k (U^T W + W^T U).  Forces: gravity (constant,
!> g times the first row of S for each body block) and spring-dampers along
!> linear vectors d (force -(k (l - l0) + c dl/dt) d/l, l = |d|).
!>
!> Structured items (model.f90's add_*, hol_vel, hol_jac_tmul), so the Newton and index-1
!> matrices keep the model's sparsity (a few entries per constraint row; the KLU path of
!> fortran/core/newton_matrix.f90) instead of the dense defaults' full blocks: G and (G v)_q
!> from the affine entry list below, M from its body blocks, (G^T lam)_q and the springs' f_q, f_v
!> as the U^T B W sandwiches of the dense items, each adding its whole pattern whatever the values.
!>
!> ipar = [d, nbody, mh, nspring, nvec, nterms(1:nvec), offsets of all terms (0-based)]
!>        vectors 2k-1, 2k are u_k, w_k of constraint k; vector 2 mh + j is spring j's d.
!> rpar = [gravity(d), S of each body ((d+1)^2, column-major), (s_k, c_k) per constraint,
!>         (k, l0, c) per spring, (coefs(nterms), const(d)) per vector]
module model_natural_system
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_newton_matrix, only: newton_matrix_t
  implicit none
  private
  public :: natural_system_t

  type, extends(model_t) :: natural_system_t
    integer :: dim = 0, nbody = 0, nspring = 0, nvec = 0
    integer, allocatable :: vfirst(:), vlast(:), toff(:)   !< terms of vector i: vfirst(i)..vlast(i)
    real(wp), allocatable :: tcoef(:), vconst(:, :)        !< (nterm), (d, nvec)
    real(wp), allocatable :: s(:), c(:), fg(:)
    real(wp), allocatable :: spk(:), spl0(:), spc(:)
    !> G = Phi_q as a flat list of affine entries: G(erow(e), ecol(e)) +=
    !> econst(e) + sum_t gcoef(t) x(gidx(t)), t = efirst(e)..elast(e) (built once)
    integer, allocatable :: erow(:), ecol(:), efirst(:), elast(:), gidx(:)
    real(wp), allocatable :: econst(:), gcoef(:)
    !> The entries not identically zero (a term, or a nonzero constant), in list order: the
    !> products G v, G^T lam skip the rest (a third of A04's, 128 of 420: a joint axis's
    !> components along a fixed unit vector), their sums unchanged; the assembly adds them all
    !> (the pattern is the list's)
    integer, allocatable :: live(:)
  contains
    procedure :: init => nat_init
    procedure :: force => nat_force
    procedure :: force_jac => nat_force_jac
    procedure :: hol => nat_hol
    procedure :: hol_jac => nat_hol_jac
    procedure :: hol_vel_q => nat_hol_vel_q
    procedure :: hol_gamma => nat_hol_gamma
    procedure :: hol_gtl_q => nat_hol_gtl_q
    procedure :: energy => nat_energy
    procedure :: hol_vel => nat_hol_vel
    procedure :: hol_jac_tmul => nat_hol_jac_tmul
    procedure :: mass_mul => nat_mass_mul
    procedure :: add_qq => nat_add_qq
    procedure :: add_hol_jac => nat_add_hol_jac
    procedure :: add_hol_vel_q => nat_add_hol_vel_q
  end type

contains

  subroutine nat_init(self, ipar, rpar, ierr)
    class(natural_system_t), intent(inout) :: self
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: ierr
    integer :: d, nb, mh, ns, nv, nterm, i, k, p, b, blk, o
    real(wp) :: smat(4, 4)
    ierr = 1
    if (size(ipar) < 5) return
    d = ipar(1); nb = ipar(2); mh = ipar(3); ns = ipar(4); nv = ipar(5)
    if ((d /= 2 .and. d /= 3) .or. nb < 1 .or. mh < 0 .or. ns < 0 .or. nv /= 2 * mh + ns) return
    if (size(ipar) < 5 + nv) return
    if (any(ipar(6:5 + nv) < 0)) return
    nterm = sum(ipar(6:5 + nv))
    if (size(ipar) /= 5 + nv + nterm) return
    blk = d * (d + 1)
    if (size(rpar) /= d + nb * (d + 1)**2 + 2 * mh + 3 * ns + nterm + d * nv) return
    self%dim = d; self%nbody = nb; self%nspring = ns; self%nvec = nv
    self%n = nb * blk
    self%mh = mh
    self%mn = 0
    self%scleronomic = .true.
    allocate(self%vfirst(nv), self%vlast(nv), self%toff(nterm), self%tcoef(nterm), self%vconst(d, nv))
    allocate(self%s(mh), self%c(mh), self%mconst(self%n, self%n), self%fg(self%n), self%spk(ns), self%spl0(ns), self%spc(ns))
    self%toff = ipar(6 + nv:)
    if (any(self%toff < 0) .or. any(self%toff > self%n - d)) return
    k = 0
    do i = 1, nv
      self%vfirst(i) = k + 1
      k = k + ipar(5 + i)
      self%vlast(i) = k
    end do
    ! rpar
    p = d
    self%mconst = 0
    self%fg = 0
    do b = 1, nb
      smat = 0
      smat(1:d + 1, 1:d + 1) = reshape(rpar(p + 1:p + (d + 1)**2), [d + 1, d + 1])
      p = p + (d + 1)**2
      o = (b - 1) * blk
      do i = 1, d + 1
        do k = 1, d + 1
          call add_diag(self%mconst, o + (i - 1) * d, o + (k - 1) * d, d, smat(i, k))
        end do
        self%fg(o + (i - 1) * d + 1:o + i * d) = smat(1, i) * rpar(1:d)
      end do
    end do
    do k = 1, mh
      self%s(k) = rpar(p + 1); self%c(k) = rpar(p + 2)
      p = p + 2
    end do
    do k = 1, ns
      self%spk(k) = rpar(p + 1); self%spl0(k) = rpar(p + 2); self%spc(k) = rpar(p + 3)
      p = p + 3
    end do
    do i = 1, nv
      do k = self%vfirst(i), self%vlast(i)
        p = p + 1
        self%tcoef(k) = rpar(p)
      end do
      self%vconst(:, i) = rpar(p + 1:p + d)
      p = p + d
    end do
    self%has_energy = .true.   ! mechanical energy; conserved when no spring has damping
    call build_jacobian_entries(self)
    ierr = 0
  end subroutine

  !> The affine entries of G: constraint k = s u.w - c contributes, for every
  !> term (o, cf) of u and component l, s cf w_l at column o + l (and the same
  !> with u and w exchanged); w_l = w0_l + sum of w's terms at o' + l.
  subroutine build_jacobian_entries(m)
    type(natural_system_t), intent(inout) :: m
    integer :: k, side, iv, jv, t, t2, l, ne, nt, pass
    do pass = 1, 2
      ne = 0; nt = 0
      do k = 1, m%mh
        do side = 1, 2
          iv = 2 * k - 2 + side          ! the vector whose terms pick the columns
          jv = 2 * k + 1 - side          ! the vector whose value is the entry
          do t = m%vfirst(iv), m%vlast(iv)
            do l = 1, m%dim
              ne = ne + 1
              if (pass == 2) then
                m%erow(ne) = k
                m%ecol(ne) = m%toff(t) + l
                m%econst(ne) = m%s(k) * m%tcoef(t) * m%vconst(l, jv)
                m%efirst(ne) = nt + 1
              end if
              do t2 = m%vfirst(jv), m%vlast(jv)
                nt = nt + 1
                if (pass == 2) then
                  m%gidx(nt) = m%toff(t2) + l
                  m%gcoef(nt) = m%s(k) * m%tcoef(t) * m%tcoef(t2)
                end if
              end do
              if (pass == 2) m%elast(ne) = nt
            end do
          end do
        end do
      end do
      if (pass == 1) allocate(m%erow(ne), m%ecol(ne), m%econst(ne), m%efirst(ne), m%elast(ne), &
                              m%gidx(nt), m%gcoef(nt))
    end do
    m%live = pack([(k, k = 1, ne)], m%elast >= m%efirst .or. m%econst /= 0)
  end subroutine

  pure subroutine add_diag(a, i0, j0, d, x)
    real(wp), intent(inout) :: a(:, :)
    integer, intent(in) :: i0, j0, d
    real(wp), intent(in) :: x
    integer :: l
    do l = 1, d
      a(i0 + l, j0 + l) = a(i0 + l, j0 + l) + x
    end do
  end subroutine

  !> Linear vector iv at x (with its constant when with_const), in u(1:d).
  pure subroutine linvec(self, iv, x, with_const, u)
    type(natural_system_t), intent(in) :: self
    integer, intent(in) :: iv
    real(wp), intent(in) :: x(*)
    logical, intent(in) :: with_const
    real(wp), intent(out) :: u(3)
    integer :: t, o, l
    real(wp) :: cf
    if (with_const) then
      u(1:self%dim) = self%vconst(:, iv)
    else
      u = 0
    end if
    do t = self%vfirst(iv), self%vlast(iv)
      o = self%toff(t)
      cf = self%tcoef(t)
      do l = 1, self%dim
        u(l) = u(l) + cf * x(o + l)
      end do
    end do
  end subroutine

  !> row(:) += s * U_iv^T x  (x a d-vector): the transpose of the linear part.
  pure subroutine add_transpose(self, iv, s, x, row)
    class(natural_system_t), intent(in) :: self
    integer, intent(in) :: iv
    real(wp), intent(in) :: s, x(:)
    real(wp), intent(inout) :: row(:)
    integer :: t, o
    do t = self%vfirst(iv), self%vlast(iv)
      o = self%toff(t)
      row(o + 1:o + self%dim) = row(o + 1:o + self%dim) + s * self%tcoef(t) * x
    end do
  end subroutine

  !> a += s * U_ia^T B U_ib  (B a d x d matrix).
  pure subroutine add_sandwich(self, ia, ib, s, bmat, a)
    class(natural_system_t), intent(in) :: self
    integer, intent(in) :: ia, ib
    real(wp), intent(in) :: s, bmat(:, :)
    real(wp), intent(inout) :: a(:, :)
    integer :: t1, t2, o1, o2, d
    d = self%dim
    do t1 = self%vfirst(ia), self%vlast(ia)
      o1 = self%toff(t1)
      do t2 = self%vfirst(ib), self%vlast(ib)
        o2 = self%toff(t2)
        a(o1 + 1:o1 + d, o2 + 1:o2 + d) = a(o1 + 1:o1 + d, o2 + 1:o2 + d) &
                                          + (s * self%tcoef(t1) * self%tcoef(t2)) * bmat
      end do
    end do
  end subroutine

  !> Spring j: force phi on its line vector and the derivatives phi_d, phi_ddot.
  subroutine spring_phi(self, j, q, v, phi, phid, phiv)
    class(natural_system_t), intent(in) :: self
    integer, intent(in) :: j
    real(wp), intent(in) :: q(:), v(:)
    real(wp), intent(out) :: phi(self%dim), phid(self%dim, self%dim), phiv(self%dim, self%dim)
    real(wp) :: dv3(3), ddv3(3), dv(self%dim), ddv(self%dim), u(self%dim), proj(self%dim, self%dim)
    real(wp) :: ell, ldot, mag
    integer :: iv, l
    iv = 2 * self%mh + j
    call linvec(self, iv, q, .true., dv3)
    call linvec(self, iv, v, .false., ddv3)
    dv = dv3(1:self%dim)
    ddv = ddv3(1:self%dim)
    ell = norm2(dv)
    u = dv / ell                     ! ell = 0: the direction is undefined (NaN propagates)
    ldot = dot_product(u, ddv)
    mag = self%spk(j) * (ell - self%spl0(j)) + self%spc(j) * ldot
    proj = -spread(u, 2, self%dim) * spread(u, 1, self%dim)
    do l = 1, self%dim
      proj(l, l) = proj(l, l) + 1
    end do
    proj = proj / ell
    phi = -mag * u
    phid = -spread(u, 2, self%dim) * spread(self%spk(j) * u + self%spc(j) * matmul(proj, ddv), 1, self%dim) &
           - mag * proj
    phiv = -self%spc(j) * spread(u, 2, self%dim) * spread(u, 1, self%dim)
  end subroutine

  subroutine nat_force(self, t, q, v, f)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: f(self%n)
    real(wp) :: phi(self%dim), pd(self%dim, self%dim), pv(self%dim, self%dim)
    integer :: j
    f = self%fg
    do j = 1, self%nspring
      call spring_phi(self, j, q, v, phi, pd, pv)
      call add_transpose(self, 2 * self%mh + j, 1.0_wp, phi, f)
    end do
  end subroutine

  subroutine nat_force_jac(self, t, q, v, fq, fv)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: fq(self%n, self%n), fv(self%n, self%n)
    real(wp) :: phi(self%dim), pd(self%dim, self%dim), pv(self%dim, self%dim)
    integer :: j, iv
    fq = 0
    fv = 0
    do j = 1, self%nspring
      iv = 2 * self%mh + j
      call spring_phi(self, j, q, v, phi, pd, pv)
      call add_sandwich(self, iv, iv, 1.0_wp, pd, fq)
      call add_sandwich(self, iv, iv, 1.0_wp, pv, fv)
    end do
  end subroutine

  !> p(k) = s_k u_k(x) . w_k(x), with the vectors' constants (with_const) or their linear
  !> parts only: g = p(q) - c and hol_gamma = 2 p(v).
  subroutine scaled_products(self, x, with_const, p)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: x(:)
    logical, intent(in) :: with_const
    real(wp), intent(out) :: p(self%mh)
    select type (self)
    type is (natural_system_t)
      call products(self, x, with_const, p)
    end select
  end subroutine

  !> scaled_products: linvec's sums and dot_product's, in their order, written out with the
  !> components unrolled (d = 2 or 3): g and gamma are evaluated at every Newton iteration and
  !> in every step's residuals, where linvec's calls and short loops cost 2-3 times the flops
  subroutine products(self, x, with_const, p)
    type(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: x(*)
    logical, intent(in) :: with_const
    real(wp), intent(out) :: p(*)
    call products_k(self%mh, self%dim, self%vfirst, self%vlast, self%toff, self%tcoef, self%vconst, self%s, &
                    x, with_const, p)
  end subroutine

  !> products' loop on explicit-shape arrays (see g_apply_live): the same operations in the same order.
  pure subroutine products_k(mh, d, vfirst, vlast, toff, tcoef, vconst, s, x, with_const, p)
    integer, intent(in) :: mh, d, vfirst(*), vlast(*), toff(*)
    logical, intent(in) :: with_const
    real(wp), intent(in) :: tcoef(*), vconst(d, *), s(*), x(*)
    real(wp), intent(out) :: p(*)
    real(wp) :: u1, u2, u3, w1, w2, w3, cf
    integer :: k, t, o
    logical :: three
    three = d == 3
    do k = 1, mh
      u1 = 0; u2 = 0; u3 = 0; w1 = 0; w2 = 0; w3 = 0
      if (with_const) then
        u1 = vconst(1, 2 * k - 1); u2 = vconst(2, 2 * k - 1)
        w1 = vconst(1, 2 * k); w2 = vconst(2, 2 * k)
        if (three) then
          u3 = vconst(3, 2 * k - 1); w3 = vconst(3, 2 * k)
        end if
      end if
      do t = vfirst(2 * k - 1), vlast(2 * k - 1)
        o = toff(t); cf = tcoef(t)
        u1 = u1 + cf * x(o + 1); u2 = u2 + cf * x(o + 2)
        if (three) u3 = u3 + cf * x(o + 3)
      end do
      do t = vfirst(2 * k), vlast(2 * k)
        o = toff(t); cf = tcoef(t)
        w1 = w1 + cf * x(o + 1); w2 = w2 + cf * x(o + 2)
        if (three) w3 = w3 + cf * x(o + 3)
      end do
      if (three) then
        p(k) = s(k) * (u1 * w1 + u2 * w2 + u3 * w3)
      else
        p(k) = s(k) * (u1 * w1 + u2 * w2)
      end if
    end do
  end subroutine

  subroutine nat_hol(self, t, q, g)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: g(self%mh)
    call scaled_products(self, q, .true., g)
    g = g - self%c
  end subroutine

  !> G(k, :) = s (w^T U + u^T W) at x; with_const = .false. gives (G v)_q at x = v.
  subroutine jac_at(self, x, with_const, gq)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: x(:)
    logical, intent(in) :: with_const
    real(wp), intent(out) :: gq(self%mh, self%n)
    real(wp) :: val
    integer :: e, t
    gq = 0
    do e = 1, size(self%erow)
      val = 0
      if (with_const) val = self%econst(e)
      do t = self%efirst(e), self%elast(e)
        val = val + self%gcoef(t) * x(self%gidx(t))
      end do
      gq(self%erow(e), self%ecol(e)) = gq(self%erow(e), self%ecol(e)) + val
    end do
  end subroutine

  subroutine nat_hol_jac(self, t, q, gq)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n)
    real(wp), intent(out) :: gq(self%mh, self%n)
    call jac_at(self, q, .true., gq)
  end subroutine

  subroutine nat_hol_vel_q(self, t, q, v, d)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: d(self%mh, self%n)
    call jac_at(self, v, .false., d)    ! (G(q) v)_q = G's linear part applied to v
  end subroutine

  subroutine nat_hol_gamma(self, t, q, v, gam)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: gam(self%mh)
    call scaled_products(self, v, .false., gam)
    gam = 2 * gam
  end subroutine

  subroutine nat_hol_gtl_q(self, t, q, lam, d)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: d(self%n, self%n)
    real(wp) :: eye(self%dim, self%dim)
    integer :: k, l
    eye = 0
    do l = 1, self%dim
      eye(l, l) = 1
    end do
    d = 0
    do k = 1, self%mh
      if (lam(k) == 0) cycle
      call add_sandwich(self, 2 * k - 1, 2 * k, lam(k) * self%s(k), eye, d)
      call add_sandwich(self, 2 * k, 2 * k - 1, lam(k) * self%s(k), eye, d)
    end do
  end subroutine

  !> The value of G's affine entry e at x (with its constant when with_const; without: (G v)_q's
  !> entry at x = v, as jac_at).
  pure real(wp) function entry_at(self, e, x, with_const) result(val)
    class(natural_system_t), intent(in) :: self
    integer, intent(in) :: e
    real(wp), intent(in) :: x(:)
    logical, intent(in) :: with_const
    integer :: t
    val = 0
    if (with_const) val = self%econst(e)
    do t = self%efirst(e), self%elast(e)
      val = val + self%gcoef(t) * x(self%gidx(t))
    end do
  end function

  subroutine nat_hol_vel(self, t, q, v, w)       ! G v (scleronomic: g_t = 0)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp), intent(out) :: w(self%mh)
    call g_apply(self, q, v, w, self%erow, self%ecol)
  end subroutine

  subroutine nat_hol_jac_tmul(self, t, q, lam, r)   ! G^T lam
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), lam(self%mh)
    real(wp), intent(out) :: r(self%n)
    call g_apply(self, q, lam, r, self%ecol, self%erow)
  end subroutine

  !> y = G(q) x (iy = erow, ix = ecol) or G(q)^T x (iy = ecol, ix = erow): G's entries
  !> entry_at(e, q, .true.) written out (the hot path of both products), the live ones only
  !> (an identically zero entry adds 0 x(ix(e)): nothing).
  subroutine g_apply(self, q, x, y, iy, ix)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: q(:), x(:)
    real(wp), intent(out) :: y(:)
    integer, intent(in) :: iy(:), ix(:)
    call g_apply_live(size(self%live), self%live, self%econst, self%efirst, self%elast, self%gcoef, self%gidx, &
                      q, x, y, size(y), iy, ix)
  end subroutine

  !> g_apply's loop on explicit-shape (contiguous) arrays: through the type's components and
  !> assumed-shape dummies gfortran reloads descriptors and strides at every access (A04's G^T lam:
  !> 14.2k instructions a call, here 6.6k with the live entries).
  pure subroutine g_apply_live(nlive, live, econst, efirst, elast, gcoef, gidx, q, x, y, ny, iy, ix)
    integer, intent(in) :: nlive, ny, live(nlive), efirst(*), elast(*), gidx(*), iy(*), ix(*)
    real(wp), intent(in) :: econst(*), gcoef(*), q(*), x(*)
    real(wp), intent(out) :: y(ny)
    integer :: k, e, i
    real(wp) :: val
    y = 0
    do k = 1, nlive
      e = live(k)
      val = econst(e)
      do i = efirst(e), elast(e)
        val = val + gcoef(i) * q(gidx(i))
      end do
      y(iy(e)) = y(iy(e)) + val * x(ix(e))
    end do
  end subroutine

  !> M a with M = S (x) E_d per body (nat_init): (d + 1)^2 d products per body instead of the
  !> dense default's n^2.
  subroutine nat_mass_mul(self, q, a, ma)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: q(self%n), a(self%n)
    real(wp), intent(out) :: ma(self%n)
    integer :: b, i, k, l, o, d, ri
    real(wp) :: sik
    d = self%dim
    if (d == 3) then
      call mass_mul_3(self%n, self%nbody, self%mconst, a, ma)
      return
    end if
    ma = 0
    do b = 1, self%nbody
      o = (b - 1) * d * (d + 1)
      do k = 1, d + 1
        do i = 1, d + 1
          sik = self%mconst(o + (i - 1) * d + 1, o + (k - 1) * d + 1)
          do l = 1, d
            ri = o + (i - 1) * d + l
            ma(ri) = ma(ri) + sik * a(o + (k - 1) * d + l)
          end do
        end do
      end do
    end do
  end subroutine

  !> nat_mass_mul in space (d = 3) on explicit-shape arrays, the component loop written out: the
  !> same products added in the same order.
  pure subroutine mass_mul_3(n, nbody, mconst, a, ma)
    integer, intent(in) :: n, nbody
    real(wp), intent(in) :: mconst(n, n), a(n)
    real(wp), intent(out) :: ma(n)
    integer :: b, i, k, o, ri, ck
    real(wp) :: sik
    ma = 0
    do b = 1, nbody
      o = (b - 1) * 12
      do k = 1, 4
        ck = o + (k - 1) * 3
        do i = 1, 4
          ri = o + (i - 1) * 3
          sik = mconst(ri + 1, ck + 1)
          ma(ri + 1) = ma(ri + 1) + sik * a(ck + 1)
          ma(ri + 2) = ma(ri + 2) + sik * a(ck + 2)
          ma(ri + 3) = ma(ri + 3) + sik * a(ck + 3)
        end do
      end do
    end do
  end subroutine

  !> asm += s G (trans: s G^T), entry by entry.
  subroutine nat_add_hol_jac(self, t, q, s, trans, asm, r0, c0)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), s
    logical, intent(in) :: trans
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp) :: val(size(self%erow))
    integer :: e, k
    call entries_at(size(val), self%econst, self%efirst, self%elast, self%gcoef, self%gidx, q, .true., val)
    if (asm%recording()) then     ! the pattern: every entry; the values: the live ones (the others add 0)
      do e = 1, size(self%erow)
        call add_entry(e)
      end do
      return
    end if
    do k = 1, size(self%live)
      call add_entry(self%live(k))
    end do

  contains

    subroutine add_entry(e)
      integer, intent(in) :: e
      if (trans) then
        call asm%add(r0 + self%ecol(e), c0 + self%erow(e), s * val(e))
      else
        call asm%add(r0 + self%erow(e), c0 + self%ecol(e), s * val(e))
      end if
    end subroutine
  end subroutine

  !> asm += s (G v)_q: G's entries without their constants, at v.
  subroutine nat_add_hol_vel_q(self, t, q, v, s, asm, r0, c0)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), s
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp) :: val(size(self%erow))
    integer :: e
    call entries_at(size(val), self%econst, self%efirst, self%elast, self%gcoef, self%gidx, v, .false., val)
    do e = 1, size(self%erow)
      call asm%add(r0 + self%erow(e), c0 + self%ecol(e), s * val(e))
    end do
  end subroutine

  !> val(e) = entry_at(e, x, with_const) for every entry, on explicit-shape arrays (see g_apply_live).
  pure subroutine entries_at(ne, econst, efirst, elast, gcoef, gidx, x, with_const, val)
    integer, intent(in) :: ne, efirst(ne), elast(ne), gidx(*)
    real(wp), intent(in) :: econst(ne), gcoef(*), x(*)
    logical, intent(in) :: with_const
    real(wp), intent(out) :: val(ne)
    integer :: e, t
    real(wp) :: v
    do e = 1, ne
      v = 0
      if (with_const) v = econst(e)
      do t = efirst(e), elast(e)
        v = v + gcoef(t) * x(gidx(t))
      end do
      val(e) = v
    end do
  end subroutine

  !> asm += sc U_ia^T B U_ib (B d x d; eye: B = I, its diagonal only), every entry of the pattern.
  subroutine asm_sandwich(self, ia, ib, sc, bmat, eye, asm, r0, c0)
    class(natural_system_t), intent(in) :: self
    integer, intent(in) :: ia, ib, r0, c0
    real(wp), intent(in) :: sc, bmat(:, :)
    logical, intent(in) :: eye
    type(newton_matrix_t), intent(inout) :: asm
    integer :: t1, t2, o1, o2, i, j
    real(wp) :: f
    do t1 = self%vfirst(ia), self%vlast(ia)
      o1 = self%toff(t1)
      do t2 = self%vfirst(ib), self%vlast(ib)
        o2 = self%toff(t2)
        f = sc * self%tcoef(t1) * self%tcoef(t2)
        do j = 1, self%dim
          if (eye) then
            call asm%add(r0 + o1 + j, c0 + o2 + j, f)
          else
            do i = 1, self%dim
              call asm%add(r0 + o1 + i, c0 + o2 + j, f * bmat(i, j))
            end do
          end if
        end do
      end do
    end do
  end subroutine

  !> asm += c(1) M + c(3) f_q + c(4) f_v + c(5) (G^T lh)_q (M constant: no c(2) term; no
  !> nonholonomic rows: no c(6) term); the same sums as model.f90's default_add_qq.
  subroutine nat_add_qq(self, t, q, v, a, lh, ln, c, asm, r0, c0)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n), a(self%n), lh(self%mh), ln(self%mn), c(6)
    type(newton_matrix_t), intent(inout) :: asm
    integer, intent(in) :: r0, c0
    real(wp) :: phi(self%dim), pd(self%dim, self%dim), pv(self%dim, self%dim), none(1, 1)
    integer :: b, i, k, l, o, d, ri, ck, j
    d = self%dim
    none = 0
    if (c(1) /= 0) then              ! M = S (x) E_d per body: its (d + 1)^2 d entries
      do b = 1, self%nbody
        o = (b - 1) * d * (d + 1)
        do k = 1, d + 1
          do i = 1, d + 1
            do l = 1, d
              ri = o + (i - 1) * d + l
              ck = o + (k - 1) * d + l
              call asm%add(r0 + ri, c0 + ck, c(1) * self%mconst(ri, ck))
            end do
          end do
        end do
      end do
    end if
    if ((c(3) /= 0 .or. c(4) /= 0) .and. self%nspring > 0) then
      do j = 1, self%nspring
        call spring_phi(self, j, q, v, phi, pd, pv)
        call asm_sandwich(self, 2 * self%mh + j, 2 * self%mh + j, 1.0_wp, c(3) * pd + c(4) * pv, .false., &
                          asm, r0, c0)
      end do
    end if
    if (c(5) /= 0) then              ! (G^T lh)_q = sum lh_k s_k (U^T W + W^T U), lh_k = 0 included
      do k = 1, self%mh
        call asm_sandwich(self, 2 * k - 1, 2 * k, c(5) * lh(k) * self%s(k), none, .true., asm, r0, c0)
        call asm_sandwich(self, 2 * k, 2 * k - 1, c(5) * lh(k) * self%s(k), none, .true., asm, r0, c0)
      end do
    end if
  end subroutine

  real(wp) function nat_energy(self, t, q, v)
    class(natural_system_t), intent(in) :: self
    real(wp), intent(in) :: t, q(self%n), v(self%n)
    real(wp) :: mv(self%n)
    real(wp) :: dv(3)
    integer :: j
    call nat_mass_mul(self, q, v, mv)
    nat_energy = 0.5_wp * dot_product(v, mv) - dot_product(self%fg, q)
    do j = 1, self%nspring
      call linvec(self, 2 * self%mh + j, q, .true., dv)
      nat_energy = nat_energy + 0.5_wp * self%spk(j) * (norm2(dv(1:self%dim)) - self%spl0(j))**2
    end do
  end function

end module model_natural_system
